"""An evaluation's results: per-run summaries and timelines, summaries over seeds, paired differences, merging and writing."""

from __future__ import annotations

import csv
import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from placer.common.atomic import write_atomic
from placer.common.errors import PlacerError
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.stats import mean_ci95

SUMMARY_METRICS = ("blocking_rate", "throughput_jobs_per_hour", "work_throughput", "mean_jct_s", "utilization")
# what a policy can change (placer.sim.metrics); absent from results written before they were measured
OUTCOME_METRICS = ("avoidable_blocking_rate", "unavoidable_share", "p95_jct_s", "mean_slowdown", "device_hours_per_job")


@dataclass
class EvaluationResult:
    config: EvaluationConfig
    runs: list[dict] = field(default_factory=list)
    timelines: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what merging did that a reader should know (merge_results)

    def summary(self) -> list[dict]:
        """Per (load, beta distribution, policy): mean and 95% half-width of each metric over seeds (load by load).

        The outcome metrics (:data:`OUTCOME_METRICS`) are NaN where the runs did not record them. A replayed trace is one
        job stream: its seeds vary only the policies' own randomness, so it gets no interval (NaN), not a spread
        that reads as certainty."""
        rows = []
        several = len(self.config.load_values) > 1
        for load in self.config.load_values:
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


STREAM_FIELDS_IGNORED = {"policies", "policy_file", "seeds", "first_seed"}  # fields that do not change the job stream of a seed


def merge_results(results: Sequence[EvaluationResult], labels: Sequence[str] | None = None) -> EvaluationResult:
    """One result from evaluations of the same job streams (settings equal but for the policies).

    Lets a new policy be compared, paired by seed, with baselines evaluated earlier. A policy
    evaluated in several of them is taken from the first, unless it reads the policy file (``learned``)
    and their policy files differ: then each file's runs stay, as ``learned[LABEL]`` (``labels``: one per
    result, e.g. its folder's name; default 1, 2, ...), and a note in ``notes`` says so. Seed ``s`` draws
    the same streams whatever the number of seeds, so evaluations with different seeds merge on the seeds they share.
    """
    labels = list(labels) if labels is not None else [str(i + 1) for i in range(len(results))]
    renames, notes = _policy_file_labels(results, labels)
    results = [_renamed(result, rename) for result, rename in zip(results, renames, strict=True)]
    first = results[0].config
    keep = _stream_settings(first)
    low = max(result.config.first_seed for result in results)
    high = min(result.config.first_seed + result.config.seeds for result in results)
    if high <= low:
        raise PlacerError("these evaluations share no seed: nothing to pair")
    policies, runs, timelines = [], [], []
    for result in results:
        other = _stream_settings(result.config)
        differing = sorted(k for k in keep if keep[k] != other[k])
        if differing:
            raise PlacerError(f"these evaluations drew different job streams (they differ in {', '.join(differing)}): nothing to pair")
        new = [p for p in result.config.policies if p not in policies]
        policies += new
        runs += [r for r in result.runs if r["policy"] in new and low <= r["seed"] < high]
        timelines += [t for t in result.timelines if t["policy"] in new and low <= t["seed"] < high]
    merged = first.model_copy(update={"policies": policies, "seeds": high - low, "first_seed": low})
    return EvaluationResult(merged, runs, timelines, notes)


def reads_policy_file(policy: str) -> bool:
    """Whether ``policy`` is the evaluation's ``--policy-file`` (``learned``, ``learned:below=L``), not a heuristic or a
    shipped policy (``learned:NAME``): two evaluations of it with different files evaluated two policies."""
    from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec

    spec = PolicySpec.parse(policy)
    return spec.kind not in HEURISTIC_KINDS and spec.positional is None


def _policy_file_labels(results: Sequence[EvaluationResult], labels: list[str]) -> tuple[list[dict[str, str]], list[str]]:
    """Per result, the new name of each of its policies that another result evaluated with another policy file
    (``learned`` -> ``learned[b]``, the label of the first result with that file), and a note per such policy."""
    files = [os.path.normpath(r.config.policy_file) if r.config.policy_file else "the shipped default" for r in results]
    renames: list[dict[str, str]] = [{} for _ in results]
    notes = []
    names = dict.fromkeys(p for r in results for p in r.config.policies)
    for policy in [p for p in names if reads_policy_file(p)]:
        having = [i for i, r in enumerate(results) if policy in r.config.policies]
        if len({files[i] for i in having}) < 2:
            continue
        label_of = {files[i]: labels[i] for i in reversed(having)}  # each file: the label of the first result with it
        for i in having:
            renames[i][policy] = f"{policy}[{label_of[files[i]]}]"
        shown = ", ".join(f"{renames[i][policy]} ({files[i]})" for i in having if label_of[files[i]] == labels[i])
        notes.append(f"{policy} was evaluated with a different policy file in each evaluation: reported apart, as {shown}")
    return renames, notes


def _renamed(result: EvaluationResult, rename: dict[str, str]) -> EvaluationResult:
    """``result`` with its policies renamed by ``rename`` (in its config, runs and timelines)."""
    if not rename:
        return result

    def name(entries: list[dict]) -> list[dict]:
        return [e | {"policy": rename[e["policy"]]} if e["policy"] in rename else e for e in entries]

    policies = [rename.get(p, p) for p in result.config.policies]
    return EvaluationResult(result.config.model_copy(update={"policies": policies}), name(result.runs), name(result.timelines))


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("placer", "numpy", "networkx", "torch", "stable-baselines3", "sb3-contrib"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def write_results(result: EvaluationResult, out: Path) -> list[Path]:
    """Write ``results.json``, ``summary.csv`` and ``timelines.json`` into ``out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PlacerError(f"cannot write results to {str(out)!r}: {exc.strerror or exc}") from None
    record = {
        "config": result.config.model_dump(mode="json"),
        "versions": versions(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
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


def _stream_settings(config: EvaluationConfig) -> dict:
    """The settings that decide an evaluation's job streams, flat (the workload's fields by name)."""
    settings = config.model_dump(exclude=STREAM_FIELDS_IGNORED)
    return {**{k: v for k, v in settings.items() if k != "workload"}, **settings["workload"]}
