"""An evaluation's results: per-run summaries and timelines, summaries over seeds, paired differences, reading and writing
(merging: :mod:`placer.evaluate.merge`)."""

from __future__ import annotations

import csv
import json
import math
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from placer.common.atomic import write_atomic
from placer.common.errors import ResultsError
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.jobs import JobsTable
from placer.evaluate.stats import mean_ci95

SUMMARY_METRICS = ("blocking_rate", "throughput_jobs_per_hour", "work_throughput", "mean_jct_s", "utilization")
# what a policy can change (placer.sim.metrics); absent from results written before they were measured
OUTCOME_METRICS = ("avoidable_blocking_rate", "unavoidable_share", "p95_jct_s", "mean_slowdown", "device_hours_per_job")


@dataclass
class EvaluationResult:
    """An evaluation's runs (one summary per run), their timelines, what merging did that a reader should know
    (``notes``: :func:`~placer.evaluate.merge.merge_results`), its per-job tables (``jobs``: the one ``jobs.csv`` of an
    evaluation, a merge's of each evaluation merged: :mod:`placer.evaluate.jobs`) and the files its policies read, by
    name (``policy_files``: ``{"file": path, "sha256": hex}``, :func:`~placer.evaluate.identity.policy_files`)."""

    config: EvaluationConfig
    runs: list[dict] = field(default_factory=list)
    timelines: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    jobs: list[JobsTable] = field(default_factory=list)
    policy_files: dict[str, dict[str, str]] = field(default_factory=dict)

    def summary(self) -> list[dict]:
        """Per (load, beta distribution, policy): mean and 95% half-width of each metric over seeds (load by load; a
        replayed trace's rows load None, as its runs: :attr:`~placer.evaluate.config.EvaluationConfig.run_loads`).

        The outcome metrics (:data:`OUTCOME_METRICS`) are NaN where the runs did not record them. A replayed trace is one
        job stream: its seeds vary only the policies' own randomness, so it gets no interval (NaN), not a spread
        that reads as certainty."""
        rows = []
        several = len(self.config.load_values) > 1
        for load in self.config.run_loads:  # a replayed trace's rows: load None (EvaluationConfig.run_loads)
            for beta in self.config.beta_labels:
                for policy in self.config.policies:
                    runs = [r for r in self.runs if r["beta_dist"] == beta and r["policy"] == policy and (not several or r["load"] == load)]
                    row = {"beta_dist": beta, "policy": policy, "seeds": len(runs)}
                    for metric in SUMMARY_METRICS + OUTCOME_METRICS:
                        values = [r[metric] for r in runs if r.get(metric) is not None]
                        row[metric], row[f"{metric}_ci95"] = mean_ci95(values)
                        if self.config.trace:
                            row[f"{metric}_ci95"] = math.nan
                    rows.append(row | {"load": load})
        return rows

    def paired(
        self, policy: str, reference: str, beta: str, metric: str = "blocking_rate", load: float | None = None
    ) -> tuple[float, float]:
        """Mean and 95% half-width over seeds of ``policy`` minus ``reference`` on the same job streams.

        ``load``: that load's runs only; None pools the loads (pairs by load and seed)."""
        runs = [r for r in self.runs if r["beta_dist"] == beta and (load is None or r.get("load") == load)]
        by_seed = {(r["policy"], r.get("load"), r["seed"]): r[metric] for r in runs}
        mine = {(lo, seed) for name, lo, seed in by_seed if name == policy}
        streams = sorted(mine & {(lo, seed) for name, lo, seed in by_seed if name == reference})
        mean, half = mean_ci95([by_seed[policy, *s] - by_seed[reference, *s] for s in streams])
        return mean, math.nan if self.config.trace else half  # one replayed trace: no interval (summary)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("placer", "numpy", "networkx", "torch", "stable-baselines3", "sb3-contrib"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def read_results(data: dict, folder: Path) -> EvaluationResult:
    """The evaluation a ``results.json`` in ``folder`` holds (parsed as ``data``), with its per-job table if it names one
    and the policy files it records. KeyError, TypeError or a ValidationError when ``data`` is no results file."""
    record = data["record"]
    config = EvaluationConfig.model_validate(record["config"])
    tables = [JobsTable.from_record(record["jobs"], folder, config.policies)] if record.get("jobs") else []
    files = {str(name): dict(entry) for name, entry in (record.get("policy_files") or {}).items()}
    return EvaluationResult(config, unloaded_trace_runs(config, list(data["runs"])), jobs=tables, policy_files=files)


def unloaded_trace_runs(config: EvaluationConfig, runs: list) -> list:
    """``runs`` as a replayed trace's record them, load None (:attr:`~EvaluationConfig.run_loads`), older files' 0.9
    (the workload's unused default) included; the runs of any other evaluation as they are."""
    return [r | {"load": None} if isinstance(r, dict) else r for r in runs] if config.trace else runs


OUTCOMES_NAMED = "avoidable blocking, unavoidable share, slowdown, device-hours"


def runs_problem(runs: object, outcomes: bool = False) -> str | None:
    """What makes ``runs`` (a results file's ``runs``) unreportable, or None: no runs, a run that is not a table of its
    policy, beta distribution, seed and :data:`SUMMARY_METRICS` as numbers (null where nothing was measured), or, with
    ``outcomes``, a run without :data:`OUTCOME_METRICS` (written before placer measured them)."""
    if not isinstance(runs, list) or not runs:
        return "holds no runs"
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("policy"), str) or not isinstance(run.get("beta_dist"), str):
            return f"run {i} names no policy and beta distribution"
        where = f"run {i} ({run['policy']}, beta {run['beta_dist']})"
        for metric in SUMMARY_METRICS + (OUTCOME_METRICS if outcomes else ()):
            if metric not in run:
                if metric in OUTCOME_METRICS:
                    return f"its runs predate the outcome metrics ({OUTCOMES_NAMED}): evaluate again for --outcomes"
                return f"{where} has no {metric}"
            value = run[metric]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                return f"{where}: {metric} is {value!r}, not a number"
    return None


def write_results(result: EvaluationResult, out: Path) -> list[Path]:
    """Write ``results.json``, ``summary.csv`` and ``timelines.json`` into ``out``; ``results.json`` names the per-job
    table (``record.jobs``: its file, rows and sha256) when the evaluation wrote one, and records its policy files."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"cannot write results to {str(out)!r}: {exc.strerror or exc}") from None
    record = {
        "config": result.config.model_dump(mode="json"),
        "versions": versions(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if len(result.jobs) == 1 and result.jobs[0].seeds is None:  # an evaluation's own table (a merge's are not written)
        record["jobs"] = result.jobs[0].record(out)
    if result.policy_files:
        record["policy_files"] = result.policy_files
    paths = [out / "results.json", out / "summary.csv", out / "timelines.json"]
    write_atomic(paths[0], json.dumps({"record": record, "runs": result.runs}, indent=1) + "\n")
    rows = result.summary()

    def write_csv(fh) -> None:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    write_atomic(paths[1], write_csv, newline="")
    write_atomic(paths[2], json.dumps(result.timelines) + "\n")
    return paths
