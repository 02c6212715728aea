"""Offline evaluation: every policy on the same job streams, over beta distributions and seeds.

Seed ``s`` and the ``i``-th beta distribution draw the job stream from
``np.random.default_rng([s, i])`` and policy randomness from ``np.random.default_rng([s, i, 1])``,
so all policies face exactly the same jobs (common random numbers) and reruns are identical.
"""

from __future__ import annotations

import csv
import json
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from placer.catalog import resolve_graph, resolve_graphs
from placer.cluster import load_cluster
from placer.cost import STRATEGIES, CostModel
from placer.errors import PlacerError
from placer.metrics import blocking_series, utilization_series
from placer.options import DEFAULT_MAX_DEGREE
from placer.policy import PolicyContext, make_policy
from placer.rollout import simulate
from placer.stats import mean_ci95
from placer.workload import BetaDistribution, Workload, read_trace

SUMMARY_METRICS = ("blocking_rate", "throughput_jobs_per_hour", "work_throughput", "mean_jct_s", "utilization")


class EvaluationConfig(BaseModel):
    """Everything that determines an evaluation's results (saved beside them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    cluster: str
    graphs: list[str] = Field(default_factory=list)
    graphs_dir: str | None = None
    beta_dists: list[str] = Field(min_length=1)
    load: float = Field(gt=0)
    jobs: int = Field(ge=1)
    seeds: int = Field(ge=1)
    policies: list[str] = Field(min_length=1)
    arrival: str = "poisson"
    trace: str | None = None
    iterations: int | None = Field(default=None, ge=1)
    max_degree: int = Field(default=DEFAULT_MAX_DEGREE, ge=1)
    policy_file: str | None = None
    strategy: str = "auto"

    @field_validator("strategy")
    @classmethod
    def _valid_strategy(cls, value: str) -> str:
        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r} (choose from {', '.join(STRATEGIES)})")
        return value

    @field_validator("beta_dists")
    @classmethod
    def _valid_betas(cls, value: list[str]) -> list[str]:
        for spec in value:
            if spec != "trace":
                BetaDistribution(spec)
        return value


@dataclass
class EvaluationResult:
    config: EvaluationConfig
    runs: list[dict] = field(default_factory=list)
    timelines: list[dict] = field(default_factory=list)

    def summary(self) -> list[dict]:
        """Per (beta distribution, policy): mean and 95% half-width of each metric over seeds."""
        rows = []
        for beta in self.config.beta_dists:
            for policy in self.config.policies:
                runs = [r for r in self.runs if r["beta_dist"] == beta and r["policy"] == policy]
                row = {"beta_dist": beta, "policy": policy, "seeds": len(runs)}
                for metric in SUMMARY_METRICS:
                    values = [r[metric] for r in runs if r[metric] is not None]
                    row[metric], row[f"{metric}_ci95"] = mean_ci95(values)
                rows.append(row)
        return rows


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("placer", "numpy", "networkx", "torch", "stable-baselines3", "sb3-contrib"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def evaluate(config: EvaluationConfig, on_job: Callable[[], None] | None = None) -> EvaluationResult:
    """Run every (beta distribution, seed, policy); ``on_job`` ticks once per decision."""
    cluster = load_cluster(config.cluster)
    graphs = resolve_graphs(config.graphs or None, config.graphs_dir)
    context = PolicyContext(cluster, config.max_degree, Path(config.policy_file) if config.policy_file else None)
    policies = [make_policy(spec, context) for spec in config.policies]
    trace = read_trace(config.trace, {g.name: g for g in graphs}, resolve_graph) if config.trace else None
    result = EvaluationResult(config)
    cost = CostModel(cluster, strategy=config.strategy)  # caches are exact, so runs may share it
    for i, beta in enumerate(config.beta_dists):
        workload = (
            None
            if trace is not None
            else Workload(
                graphs,
                BetaDistribution(beta),
                config.load,
                cluster.num_devices,
                config.jobs,
                config.arrival,
                config.iterations,
                cost.sequential_iteration_s,
            )
        )
        for seed in range(config.seeds):
            for spec, policy in zip(config.policies, policies, strict=True):
                policy.reset(np.random.default_rng([seed, i, 1]))
                jobs = trace if workload is None else workload.jobs(np.random.default_rng([seed, i]))
                run = simulate(cost, jobs, policy.decide, on_job)
                m = run.metrics
                result.runs.append(
                    {"policy": spec, "seed": seed, "beta_dist": beta, "load": config.load, "cluster": cluster.name, **m.to_dict()}
                )
                times, busy = utilization_series(run.busy_timeline, cluster.num_devices, m.window_s)
                blocked_at, blocked = blocking_series(run.records, m.window_s)
                result.timelines.append(
                    {
                        "policy": spec,
                        "seed": seed,
                        "beta_dist": beta,
                        "time_s": times,
                        "busy": busy,
                        "blocking_time_s": blocked_at,
                        "blocking": blocked,
                    }
                )
    return result


def total_decisions(config: EvaluationConfig) -> int:
    """Decisions an evaluation makes (without a trace, whose length is known only once read)."""
    return config.jobs * len(config.beta_dists) * config.seeds * len(config.policies)


def write_results(result: EvaluationResult, out: Path) -> list[Path]:
    """Write ``results.json``, ``summary.csv`` and ``timelines.json`` into ``out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PlacerError(f"cannot write results to {str(out)!r}: {exc.strerror or exc}") from None
    record = {"config": result.config.model_dump(), "versions": versions(), "created": datetime.now(UTC).isoformat(timespec="seconds")}
    paths = [out / "results.json", out / "summary.csv", out / "timelines.json"]
    _atomic_write(paths[0], json.dumps({"record": record, "runs": result.runs}, indent=1))
    rows = result.summary()
    tmp = paths[1].with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(paths[1])
    _atomic_write(paths[2], json.dumps(result.timelines))
    return paths


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
