"""Run metrics from job records and the busy-device timeline.

The measurement window is ``[0, T]`` with ``T`` the last arrival: throughput counts jobs
completed inside it, utilisation averages busy devices over it.

What a policy can change: a job is *avoidable* when its fastest placement on the idle cluster,
started at arrival, meets its deadline (decided by the simulator at arrival, the same for every
policy: :func:`placer.sim.simulator.servable`). ``avoidable_blocking_rate`` is the share of those
blocked; ``unavoidable_share`` the share of all jobs that no policy could accept. A job's slowdown is
its wait plus its JCT over its fastest JCT on the idle cluster (1: served at once, as fast as possible).

Elastic runs (:mod:`placer.sim.elastic`): a resized job's record keeps the degree it started at, its JCT and finish are
where the resizes moved them, and its device-hours count the devices it held over time; ``resizes`` and
``resize_pause_s`` add up every job's resizes and the seconds they paused it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from placer.sim.types import JobRecord, Outcome


@dataclass(frozen=True)
class RunMetrics:
    jobs: int
    accepted: int
    blocking_rate: float
    blocked_by_reason: dict[str, int]
    completed_in_window: int
    window_s: float
    throughput_jobs_per_hour: float
    work_throughput: float  # sequential seconds of completed jobs per wall second
    mean_jct_s: float | None
    p95_jct_s: float | None
    mean_degree: float | None
    mean_servers: float | None  # servers spanned per accepted job
    strategy_mix: dict[str, float]  # fraction of accepted jobs per kind of split (see strategy_kind)
    utilization: float  # mean fraction of busy devices over the window
    avoidable_jobs: int = 0  # jobs some policy could accept (module docstring)
    avoidable_blocking_rate: float = 0.0  # blocked among the avoidable jobs
    unavoidable_share: float = 0.0  # jobs no policy could accept, among all
    mean_slowdown: float | None = None  # accepted jobs' (wait + JCT) / fastest JCT on the idle cluster
    device_hours_per_job: float | None = None  # device-hours (degree x JCT) per accepted job (every accepted job completes)
    resizes: int = 0  # elastic runs: times a running job's devices changed, all jobs together (0 in a fixed run)
    resize_pause_s: float = 0.0  # elastic runs: seconds jobs spent paused by those resizes, all jobs together

    def to_dict(self) -> dict:
        return asdict(self)


def compute_metrics(records: Sequence[JobRecord], busy_timeline: Sequence[tuple[float, int]], num_devices: int) -> RunMetrics:
    window = max((r.arrival_s for r in records), default=0.0)
    accepted = [r for r in records if r.outcome is Outcome.ACCEPTED]
    done = [r for r in accepted if r.finish_s is not None and r.finish_s <= window]
    jcts = np.array([r.jct_s for r in accepted], dtype=float)
    reasons = Counter(r.reason.value for r in records if r.reason is not None)
    per_hour = 3600.0 / window if window > 0 else 0.0
    return RunMetrics(
        jobs=len(records),
        accepted=len(accepted),
        blocking_rate=1 - len(accepted) / len(records) if records else 0.0,
        blocked_by_reason=dict(sorted(reasons.items())),
        completed_in_window=len(done),
        window_s=window,
        throughput_jobs_per_hour=len(done) * per_hour,
        work_throughput=sum(r.sequential_jct_s for r in done) / window if window > 0 else 0.0,
        mean_jct_s=float(jcts.mean()) if len(jcts) else None,
        p95_jct_s=float(np.percentile(jcts, 95)) if len(jcts) else None,
        mean_degree=float(np.mean([r.degree for r in accepted])) if accepted else None,
        mean_servers=float(np.mean([r.servers for r in accepted])) if accepted else None,
        strategy_mix={k: n / len(accepted) for k, n in sorted(Counter(strategy_kind(r.strategy) for r in accepted).items())},
        utilization=mean_utilization(busy_timeline, num_devices, window),
        resizes=sum(r.resizes for r in records),
        resize_pause_s=math.fsum(r.resize_pause_s for r in records),
        **avoidability(records),
    )


def avoidability(records: Sequence[JobRecord]) -> dict:
    """The metrics of what a policy can change (module docstring): avoidable jobs, their blocking rate,
    the unavoidable share, mean slowdown and device-hours per accepted job."""
    avoidable = [r for r in records if r.avoidable]
    accepted = [r for r in records if r.outcome is Outcome.ACCEPTED]
    slowdowns = [(r.wait_s + r.jct_s) / r.fastest_jct_s for r in accepted if r.fastest_jct_s and r.jct_s is not None]
    return {
        "avoidable_jobs": len(avoidable),
        "avoidable_blocking_rate": sum(r.outcome is not Outcome.ACCEPTED for r in avoidable) / len(avoidable) if avoidable else 0.0,
        "unavoidable_share": 1 - len(avoidable) / len(records) if records else 0.0,
        "mean_slowdown": float(np.mean(slowdowns)) if slowdowns else None,
        "device_hours_per_job": sum(s for r in accepted if (s := r.device_seconds) is not None) / 3600 / len(accepted)
        if accepted
        else None,
    }


def strategy_kind(label: str | None) -> str:
    """``single`` (one device), ``dp``, ``tp``, ``pp``, ``hybrid`` (two or more > 1) or ``sipml``, from a strategy label."""
    if not label:
        return "unknown"
    if label.startswith("sipml"):
        return "single" if label == "sipml1" else "sipml"
    sizes = {part[:2]: int(part[2:]) for part in label.split("-")}
    split = [k for k, v in sizes.items() if v > 1]
    return "single" if not split else split[0] if len(split) == 1 else "hybrid"


def mean_utilization(busy_timeline: Sequence[tuple[float, int]], num_devices: int, until: float) -> float:
    """Time-averaged fraction of busy devices over ``[0, until]`` (a step function)."""
    if until <= 0:
        return 0.0
    times = np.array([t for t, _ in busy_timeline] + [until])
    busy = np.array([b for _, b in busy_timeline], dtype=float)
    spans = np.clip(np.minimum(times[1:], until) - np.minimum(times[:-1], until), 0, None)
    return float((spans * busy).sum() / (until * num_devices))


def utilization_series(
    busy_timeline: Sequence[tuple[float, int]], num_devices: int, until: float, points: int = 200
) -> tuple[list[float], list[float]]:
    """Busy fraction sampled at ``points`` evenly spaced times in ``[0, until]``."""
    times = np.array([t for t, _ in busy_timeline])
    busy = np.array([b for _, b in busy_timeline], dtype=float)
    grid = np.linspace(0, until, points)
    idx = np.searchsorted(times, grid, side="right") - 1
    return grid.tolist(), (busy[np.clip(idx, 0, None)] / num_devices).tolist()


def blocking_series(records: Sequence[JobRecord], until: float, bins: int = 40) -> tuple[list[float], list[float | None]]:
    """Fraction of arrivals blocked in each of ``bins`` equal spans of ``[0, until]`` (None for an empty span).

    Returns the spans' midpoints (seconds) and the fractions.
    """
    if until <= 0 or not records:
        return [], []
    edges = np.linspace(0, until, bins + 1)
    arrivals = np.array([r.arrival_s for r in records])
    blocked = np.array([r.outcome is not Outcome.ACCEPTED for r in records], dtype=float)
    index = np.clip(np.searchsorted(edges, arrivals, side="right") - 1, 0, bins - 1)
    counts = np.bincount(index, minlength=bins)
    sums = np.bincount(index, weights=blocked, minlength=bins)
    fractions = [float(b / c) if c else None for b, c in zip(sums, counts, strict=True)]
    return ((edges[:-1] + edges[1:]) / 2).tolist(), fractions
