"""Offline evaluation: every policy on the same job streams, over beta distributions and seeds.

Seed ``s`` and the ``i``-th beta distribution draw the job stream from
``np.random.default_rng([s, i])`` and policy randomness from ``np.random.default_rng([s, i, 1])``,
so all policies face exactly the same jobs (common random numbers) and reruns are identical.
"""

from __future__ import annotations

import csv
import json
import platform
from collections.abc import Callable, Sequence
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
from placer.policy import PolicyContext, make_policy, queue_for
from placer.queueing import QueueConfig
from placer.rollout import simulate
from placer.stats import mean_ci95
from placer.workload import BetaDistribution, SizeDistribution, Workload, read_trace

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
    queue: str = "none"
    size: str = "const"

    @field_validator("queue")
    @classmethod
    def _valid_queue(cls, value: str) -> str:
        QueueConfig.parse(value)
        return value

    @field_validator("size")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        SizeDistribution(value)
        return value

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

    def paired(self, policy: str, reference: str, beta: str, metric: str = "blocking_rate") -> tuple[float, float]:
        """Mean and 95% half-width over seeds of ``policy`` minus ``reference`` on the same job streams."""
        by_seed = {(r["policy"], r["seed"]): r[metric] for r in self.runs if r["beta_dist"] == beta}
        seeds = sorted({seed for name, seed in by_seed if name == policy} & {seed for name, seed in by_seed if name == reference})
        return mean_ci95([by_seed[policy, s] - by_seed[reference, s] for s in seeds])


STREAM_FIELDS_IGNORED = {"policies", "policy_file", "seeds"}  # fields that do not change the job stream of a seed


def merge_results(results: Sequence[EvaluationResult]) -> EvaluationResult:
    """One result from evaluations of the same job streams (settings equal but for the policies).

    Lets a new policy be compared, paired by seed, with baselines evaluated earlier. A policy
    evaluated in several of them is taken from the first. Seed ``s`` draws the same streams
    whatever the number of seeds, so evaluations with different numbers of seeds merge on the
    seeds they share (the fewest).
    """
    first = results[0].config
    keep = first.model_dump(exclude=STREAM_FIELDS_IGNORED)
    seeds = min(result.config.seeds for result in results)
    policies, runs, timelines = [], [], []
    for result in results:
        other = result.config.model_dump(exclude=STREAM_FIELDS_IGNORED)
        differing = sorted(k for k in keep if keep[k] != other[k])
        if differing:
            raise PlacerError(f"these evaluations drew different job streams (they differ in {', '.join(differing)}): nothing to pair")
        new = [p for p in result.config.policies if p not in policies]
        policies += new
        runs += [r for r in result.runs if r["policy"] in new and r["seed"] < seeds]
        timelines += [t for t in result.timelines if t["policy"] in new and t["seed"] < seeds]
    return EvaluationResult(first.model_copy(update={"policies": policies, "seeds": seeds}), runs, timelines)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("placer", "numpy", "networkx", "torch", "stable-baselines3", "sb3-contrib"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


@dataclass(frozen=True)
class Task:
    """One run of an evaluation: the ``beta_index``-th distribution, ``seed``, the ``policy_index``-th policy."""

    beta_index: int
    seed: int
    policy_index: int


def tasks(config: EvaluationConfig) -> list[Task]:
    """Every run of ``config``, in the order results are reported."""
    return [Task(i, seed, k) for i in range(len(config.beta_dists)) for seed in range(config.seeds) for k in range(len(config.policies))]


class Runner:
    """Builds an evaluation's cluster, graphs, policies and cost model once and runs its tasks.

    Each task's randomness comes only from its seed and distribution index, so a task gives the
    same result whichever runner runs it, in whatever order: in this process, a process pool or
    a Ray cluster (:mod:`placer.distributed`).
    """

    def __init__(self, config: EvaluationConfig) -> None:
        self.config = config
        self.cluster = load_cluster(config.cluster)
        self.graphs = resolve_graphs(config.graphs or None, config.graphs_dir)
        context = PolicyContext(self.cluster, config.max_degree, Path(config.policy_file) if config.policy_file else None)
        self.policies = [make_policy(spec, context) for spec in config.policies]
        self.trace = read_trace(config.trace, {g.name: g for g in self.graphs}, resolve_graph) if config.trace else None
        self.cost = CostModel(self.cluster, strategy=config.strategy)  # caches are exact, so runs may share it
        self.queue = QueueConfig.parse(config.queue)

    def workload(self, beta: str) -> Workload:
        config = self.config
        return Workload(
            self.graphs,
            BetaDistribution(beta),
            config.load,
            self.cluster.num_devices,
            config.jobs,
            config.arrival,
            config.iterations,
            self.cost.sequential_iteration_s,
            SizeDistribution(config.size),
        )

    def run(self, task: Task, on_job: Callable[[], None] | None = None) -> tuple[dict, dict]:
        """The task's run summary and its timelines."""
        config, i, seed = self.config, task.beta_index, task.seed
        beta, spec, policy = config.beta_dists[i], config.policies[task.policy_index], self.policies[task.policy_index]
        policy.reset(np.random.default_rng([seed, i, 1]))
        jobs = self.trace if self.trace is not None else list(self.workload(beta).jobs(np.random.default_rng([seed, i])))
        if hasattr(policy, "foresee"):  # a clairvoyant reference (hindsight) is told the stream
            policy.foresee(jobs)
        run = simulate(self.cost, jobs, policy.decide, on_job, queue_for(policy, self.queue))
        m = run.metrics
        summary = {"policy": spec, "seed": seed, "beta_dist": beta, "load": config.load, "cluster": self.cluster.name, **m.to_dict()}
        if hasattr(policy, "stats"):  # a planner's own account of the run (lookahead: its deviations from lean)
            summary["policy_stats"] = policy.stats()
        times, busy = utilization_series(run.busy_timeline, self.cluster.num_devices, m.window_s)
        blocked_at, blocked = blocking_series(run.records, m.window_s)
        timeline = {
            "policy": spec,
            "seed": seed,
            "beta_dist": beta,
            "time_s": times,
            "busy": busy,
            "blocking_time_s": blocked_at,
            "blocking": blocked,
        }
        return summary, timeline


def evaluate(
    config: EvaluationConfig,
    on_job: Callable[[], None] | None = None,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    on_task: Callable[[int], None] | None = None,
) -> EvaluationResult:
    """Run every (beta distribution, seed, policy).

    ``workers`` > 1 spreads the runs over that many local processes, ``ray_address`` over a Ray
    cluster (``"local"`` starts one here); the results are the same as a serial run's, in the
    same order. ``on_job`` ticks once per job settled (serial runs only); ``on_task(jobs)`` once
    per finished run, with its number of jobs.
    """
    todo = tasks(config)
    if ray_address is not None or workers > 1:
        from placer.distributed import run_tasks

        outputs = run_tasks(config, todo, workers=workers, ray_address=ray_address, on_task=on_task)
    else:
        runner = Runner(config)
        outputs = []
        for task in todo:
            outputs.append(runner.run(task, on_job))
            if on_task is not None:
                on_task(outputs[-1][0]["jobs"])
    result = EvaluationResult(config)
    for summary, timeline in outputs:
        result.runs.append(summary)
        result.timelines.append(timeline)
    return result


def total_decisions(config: EvaluationConfig) -> int:
    """Jobs an evaluation decides (without a trace, whose length is known only once read)."""
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
