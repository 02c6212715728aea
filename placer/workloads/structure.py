"""Structure in a job stream: a daily cycle, sweeps, recurring jobs, a real trace's arrival times.

A structure spec is ``iid`` (independent arrivals, the default) or one or more parts joined by
``+``, each ``KIND`` or ``KIND:key=value:...``:

- ``daily:amp=A:period=P``: the arrival rate follows ``1 + A sin(2 pi t / T + phase)``, a random
  phase per stream; ``T`` is ``P`` mean job lengths (the workload's mean sequential JCT). The offered
  load swings between ``load x (1 - A)`` and ``load x (1 + A)``: ``--load 0.9 --structure daily:amp=0.5``
  peaks at 1.35, above the cluster's capacity, for a few hours a day.
- ``sweeps:share=S:size=N:within=W``: a share ``S`` of the jobs come in sweeps, bursts of ``N``
  copies on average (at least 2) of one job (same graph, length and deadline), as a
  hyper-parameter search submits them, all within ``W`` mean job lengths of the first.
- ``recurring:share=S:templates=K:jitter=J``: a share ``S`` of the jobs are ``K`` recurring jobs,
  each returning on its own schedule (every ``K / (S x rate)`` seconds, +/- ``J`` of that period,
  a random start) with the same graph, length and deadline each time.
- ``replay:philly``: the arrival times of the shipped Philly trace (a window of
  consecutive arrivals starting at a random job), rescaled so that the window's mean gap gives the
  workload's load (its bursts and lulls kept, relative to that mean). The jobs themselves still come
  from the workload's graphs, beta and size distributions. ``replay:philly:part=train`` draws its
  windows from the trace's first two thirds by time (72.6 days, 65,057 arrivals) and
  ``replay:philly:part=held`` from the last third (36.3 days, 17,190 arrivals), so that a policy
  trained on one part is judged on arrivals it never saw.
- ``replay:FILE.csv`` (``:part=...`` as above): the arrival times of a trace of your own, in placer's replay CSV
  (``arrival_s`` in seconds, e.g. what ``placer import trace`` writes from six clusters' log formats); the path holds
  no ``:`` or ``+``. ``placer train --trace FILE`` trains and validates on windows of its ``part=train``; ``part=held`` stays a test set.

Parts compose: ``daily+sweeps``, ``replay:philly+recurring``. The offered load stays the
workload's: sweeps slow the rate of arrival events by their mean jobs per event, and recurring
jobs take their share of the rate. Defaults come from the Philly trace shipped in
``data/traces/philly_pollux.csv`` (82,247 jobs, 109 days), measured by the
repository's trace-structure study (not installed): the hourly arrival rate fits ``1 + 0.29 cos`` (busiest
hour 3.3x the quietest); a day is 6.6 mean job durations (3.6 h); 69 % of jobs arrive within
10 s (0.00076 mean job durations) of the previous one, in bursts of 5.1 on average. Times are in
mean job lengths so that they scale with the workload, whose jobs are shorter than Philly's. Helios (Hu et al., SC '21) and Alibaba PAI
(Weng et al., NSDI '22) report the same kinds of structure (daily cycles of submission, most jobs
recurring or repeated); the Philly trace has no job identities, so the recurring defaults (half of
the jobs, 8 recurring jobs) are an assumption, not a measurement.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from placer.common.errors import WorkloadError
from placer.common.shipped import data_dir
from placer.common.textfile import read_text

PHILLY_DAILY_AMPLITUDE = 0.29
PHILLY_DAY_IN_JOB_LENGTHS = 6.6
PHILLY_SWEEP_SHARE = 0.69
PHILLY_SWEEP_SIZE = 5.1
PHILLY_SWEEP_WITHIN = 10.0 / (3.65 * 3600)  # 10 s in mean Philly job durations
RECURRING_SHARE = 0.5
RECURRING_TEMPLATES = 8
RECURRING_JITTER = 0.1
REPLAY_TRACES = ("philly",)  # Gavel's trace has 1,180 arrivals and one gap of 123 mean gaps: windows of it are degenerate
REPLAY_PARTS = ("train", "held")  # a replayed trace's first two thirds by time, and its last third
REPLAY_TRAIN_SHARE = 2 / 3

_DEFAULTS: dict[str, dict[str, float]] = {
    "daily": {"amp": PHILLY_DAILY_AMPLITUDE, "period": PHILLY_DAY_IN_JOB_LENGTHS},
    "sweeps": {"share": PHILLY_SWEEP_SHARE, "size": PHILLY_SWEEP_SIZE, "within": PHILLY_SWEEP_WITHIN},
    "recurring": {"share": RECURRING_SHARE, "templates": RECURRING_TEMPLATES, "jitter": RECURRING_JITTER},
}


@dataclass(frozen=True)
class Structure:
    """A parsed structure spec (module docstring). ``Structure()`` is independent arrivals."""

    spec: str = "iid"

    def __post_init__(self) -> None:
        _ = self.parts  # validates the spec

    @cached_property
    def parts(self) -> dict[str, dict[str, float] | str]:
        """kind -> its settings (``replay`` -> the trace's name); parsed once."""
        if self.spec == "iid":
            return {}
        out: dict[str, dict[str, float] | str] = {}
        for part in self.spec.split("+"):
            kind, *args = part.split(":")
            if kind in out:
                raise WorkloadError(f"bad structure {self.spec!r}: {kind!r} appears twice")
            if kind == "replay":
                out[kind] = _replay_source(self.spec, args)
            elif kind in _DEFAULTS:
                out[kind] = _settings(self.spec, kind, args)
            elif kind == "iid":
                raise WorkloadError(f"bad structure {self.spec!r}: iid (no structure) joins no part; drop it")
            else:
                raise WorkloadError(f"bad structure {self.spec!r}: {kind!r} is not one of iid, daily, sweeps, recurring, replay")
        if "daily" in out and "replay" in out:
            raise WorkloadError(f"bad structure {self.spec!r}: a replayed trace has its own daily cycle; drop daily")
        return out

    @property
    def independent(self) -> bool:
        return self.spec == "iid"

    def settings(self, kind: str) -> dict[str, float] | None:
        """The settings of ``kind`` (daily, sweeps or recurring); None where the spec has no such part."""
        value = self.parts.get(kind)
        return value if isinstance(value, dict) else None

    @property
    def replay(self) -> str | None:
        """The name of the replayed trace; None where the spec replays none."""
        value = self.parts.get("replay")
        return value.partition(":")[0] if isinstance(value, str) else None

    @property
    def replay_part(self) -> str | None:
        """The part of the replayed trace its windows come from (:data:`REPLAY_PARTS`); None for the whole trace."""
        value = self.parts.get("replay")
        return (value.partition(":")[2] or None) if isinstance(value, str) else None

    def jobs_per_event(self) -> float:
        """Mean jobs per arrival event of the background stream (sweeps make it more than 1)."""
        sweeps = self.settings("sweeps")
        return 1 + _sweep_events(sweeps) * (sweeps["size"] - 1) if sweeps else 1.0


def _replay_source(spec: str, args: list[str]) -> str:
    """``TRACE`` or ``TRACE:PART`` from a replay part's arguments (``philly``, ``philly:part=held``, ``mine.csv``)."""
    usage = f"use replay:{' or replay:'.join(REPLAY_TRACES)} or replay:FILE.csv, optionally with :part={' or :part='.join(REPLAY_PARTS)}"
    if not args or not (args[0] in REPLAY_TRACES or args[0].endswith(".csv")) or len(args) > 2:
        raise WorkloadError(f"bad structure {spec!r}: {usage}")
    if args[0] not in REPLAY_TRACES:
        _trace_times(args[0])  # a missing or malformed file is one line now, not at the first stream
    if len(args) == 1:
        return args[0]
    key, _, part = args[1].partition("=")
    if key != "part" or part not in REPLAY_PARTS:
        raise WorkloadError(f"bad structure {spec!r}: {usage}")
    return f"{args[0]}:{part}"


def _settings(spec: str, kind: str, args: list[str]) -> dict[str, float]:
    values = dict(_DEFAULTS[kind])
    for arg in args:
        key, eq, text = arg.partition("=")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not eq or key not in values or not math.isfinite(value):
            raise WorkloadError(f"bad structure {spec!r}: {kind} takes {', '.join(f'{k}=NUMBER' for k in values)}")
        values[key] = value
    problem = {
        "daily": not (0 <= values.get("amp", 0) < 1 and values.get("period", 1) > 0) and "need 0 <= amp < 1 and period > 0",
        "sweeps": not (0 <= values.get("share", 0) < 1 and values.get("size", 2) >= 2 and values.get("within", 0) >= 0)
        and "need 0 <= share < 1, size >= 2 and within >= 0",
        "recurring": not (0 <= values.get("share", 0) < 1 and values.get("templates", 1) >= 1 and 0 <= values.get("jitter", 0) < 0.5)
        and "need 0 <= share < 1, templates >= 1 and 0 <= jitter < 0.5",
    }[kind]
    if problem:
        raise WorkloadError(f"bad structure {spec!r}: {kind}: {problem}")
    return values


def event_times(
    structure: Structure, count: int, mean_gap_s: float, job_length_s: float, rng: np.random.Generator, used: int | None = None
) -> np.ndarray:
    """(count,) increasing arrival times of the background events (before sweeps and recurring jobs).

    ``used``: how many of them the stream is expected to take (a replayed window's first ``used``
    gaps are scaled to ``mean_gap_s`` on average; default all).
    """
    if structure.replay is not None:
        gaps = replayed_gaps(structure.replay, count, rng, used, structure.replay_part)
        return np.cumsum(gaps * mean_gap_s)
    daily = structure.settings("daily")
    if not daily or daily["amp"] == 0:
        return np.cumsum(rng.exponential(mean_gap_s, count))
    amp, period = daily["amp"], daily["period"] * job_length_s
    phase = rng.uniform(0, 2 * math.pi)
    times: list[float] = []
    now = 0.0
    while len(times) < count:  # thinning: candidates at the peak rate, kept in proportion to the rate then
        now += rng.exponential(mean_gap_s / (1 + amp))
        if rng.uniform() * (1 + amp) <= 1 + amp * math.sin(2 * math.pi * now / period + phase):
            times.append(now)
    return np.asarray(times)


def sweep_sizes(structure: Structure, count: int, rng: np.random.Generator) -> np.ndarray:
    """(count,) jobs per background event: 1, or a sweep's size (2 + Poisson(size - 2): mean ``size``)."""
    sweeps = structure.settings("sweeps")
    if not sweeps or sweeps["share"] == 0:
        return np.ones(count, dtype=np.int64)
    is_sweep = rng.uniform(size=count) < _sweep_events(sweeps)
    return np.where(is_sweep, 2 + rng.poisson(sweeps["size"] - 2, count), 1)


def _sweep_events(sweeps: dict[str, float]) -> float:
    """The fraction of arrival events that are sweeps, so that a share ``share`` of the jobs come in sweeps of ``size``."""
    share, size = sweeps["share"], sweeps["size"]
    return share / size / (share / size + 1 - share)


def replayed_gaps(trace: str, count: int, rng: np.random.Generator, used: int | None = None, part: str | None = None) -> np.ndarray:
    """(count,) consecutive inter-arrival gaps of a shipped trace from a random start (wrapping within
    ``part``, :data:`REPLAY_PARTS`, or the whole trace), over the mean of the first ``used`` of them (default all)."""
    gaps = trace_part_gaps(trace, part)
    start = int(rng.integers(len(gaps)))
    window = gaps[(start + np.arange(count)) % len(gaps)]
    scale = window[: max(1, used or count)].mean()
    return window / scale if scale > 0 else np.ones(count)


def trace_part_gaps(trace: str, part: str | None = None) -> np.ndarray:
    """The inter-arrival gaps (s) of the arrivals in ``part`` of the trace (:data:`REPLAY_PARTS`; None: all):
    ``train`` the arrivals before :data:`REPLAY_TRAIN_SHARE` of its time span, ``held`` those from it on, so
    that no gap is in both."""
    times = _trace_times(trace)
    if part is None:
        return np.diff(times)
    cut = int(np.searchsorted(times, times[0] + REPLAY_TRAIN_SHARE * (times[-1] - times[0])))
    return np.diff(times[:cut] if part == "train" else times[cut:])


@cache
def _trace_times(trace: str) -> np.ndarray:
    """The trace's arrival times in seconds, sorted (a trace's tied arrivals repeat a time): the shipped Philly trace's,
    or those of the replay CSV at the path ``trace`` (its ``arrival_s`` column)."""
    if trace in REPLAY_TRACES:
        path = data_dir() / "traces" / "philly_pollux.csv"
        rows = csv.DictReader(read_text(path, what="trace", error=WorkloadError).splitlines())
        times = np.asarray([datetime.fromisoformat(row["timestamp"]).timestamp() for row in rows], dtype=np.float64)
    else:
        path = Path(trace)
        times = _arrival_column(path, csv.DictReader(read_text(path, what="trace", error=WorkloadError).splitlines()))
    times = np.sort(times)
    if len(times) < 3 or times[-1] <= times[0]:
        raise WorkloadError(f"{path}: too few arrivals to replay (at least 3, over a time span)")
    return times


def _arrival_column(path: Path, rows: csv.DictReader) -> np.ndarray:
    """The ``arrival_s`` of every row of a replay CSV (seconds), or one line naming the first row that has none."""
    if "arrival_s" not in (rows.fieldnames or ()):
        raise WorkloadError(f"{path}: not a replay CSV (no arrival_s column; placer import trace writes one)")
    times = []
    for line, row in enumerate(rows, start=2):
        try:
            times.append(float(row["arrival_s"]))
        except (TypeError, ValueError):
            raise WorkloadError(f"{path}:{line}: arrival_s {row['arrival_s']!r} is not a number of seconds") from None
    values = np.asarray(times, dtype=np.float64)
    if not np.isfinite(values).all():
        raise WorkloadError(f"{path}: an arrival_s is not finite")
    return values
