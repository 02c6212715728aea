"""Workloads: deadline (beta) distributions, arrival processes and job streams.

Every sampler takes an ``np.random.Generator``; nothing here seeds anything globally.
"""

from __future__ import annotations

import csv
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text
from placer.graphs.job_graph import JobGraph
from placer.workloads.structure import Structure, event_times, sweep_sizes

# PAC-ML's four deadline distributions: A uniform(0.1, 1); B, C, D skew-normal with skew
# +5, 0, -5, clipped to (0, 1]. PAC-ML does not state loc/scale; ours put B's mass on tight
# deadlines, C's in the middle and D's on loose ones.
SKEW_NORMAL = {"B": (5.0, 0.1, 0.35), "C": (0.0, 0.5, 0.2), "D": (-5.0, 0.9, 0.35)}
BETA_MIN = 0.01


@dataclass(frozen=True)
class BetaDistribution:
    """A named beta distribution: ``A``-``D``, ``uniform:LO:HI`` or ``const:B``."""

    spec: str

    def __post_init__(self) -> None:
        _ = self.parsed  # validates the spec

    @cached_property
    def parsed(self) -> tuple[str, tuple[float, ...]]:
        """(kind, its numbers): ``("C", ())``, ``("uniform", (0.2, 0.4))``; parsed once."""
        kind, *args = self.spec.split(":")
        if kind in ("A", *SKEW_NORMAL) and not args:
            return kind, ()
        try:
            values = tuple(float(a) for a in args)
        except ValueError:
            values = ()
        if kind == "uniform" and len(values) == 2 and 0 < values[0] <= values[1] <= 1:
            return kind, values
        if kind == "const" and len(values) == 1 and 0 < values[0] <= 1:
            return kind, values
        raise WorkloadError(f"bad beta distribution {self.spec!r}: use A, B, C, D, uniform:LO:HI or const:B with 0 < LO <= HI <= 1")

    @cached_property
    def stream_key(self) -> int:
        """The seed component of this distribution's job streams: 0-3 for A-D (their places in PAC-ML's list), else a
        hash of the spec. A distribution draws the same streams wherever it stands in a list of them."""
        return "ABCD".index(self.spec) if self.spec in ("A", "B", "C", "D") else 4 + zlib.crc32(self.spec.encode()) % 2**31

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        kind, values = self.parsed
        if kind == "A":
            return rng.uniform(0.1, 1.0, size)
        if kind in SKEW_NORMAL:
            skew, loc, scale = SKEW_NORMAL[kind]
            return np.clip(loc + scale * _skew_normal(rng, skew, size), BETA_MIN, 1.0)
        if kind == "uniform":
            return rng.uniform(values[0], values[1], size)
        return np.full(size, values[0])


def _skew_normal(rng: np.random.Generator, skew: float, size: int) -> np.ndarray:
    delta = skew / math.sqrt(1 + skew * skew)
    u0, v = rng.standard_normal(size), rng.standard_normal(size)
    u1 = delta * u0 + math.sqrt(1 - delta * delta) * v
    return np.where(u0 >= 0, u1, -u1)


@dataclass(frozen=True)
class SizeDistribution:
    """How much a job's training length varies: ``const`` (the graph's own iterations) or
    ``loguniform:LO:HI`` (its iterations times a factor log-uniform in [LO, HI], e.g. ``0.1:10``
    for the 100-fold spread of real traces)."""

    spec: str = "const"

    def __post_init__(self) -> None:
        _ = self.bounds  # validates the spec

    @cached_property
    def bounds(self) -> tuple[float, float] | None:
        """(LO, HI) of ``loguniform:LO:HI``, None for ``const``; parsed once."""
        kind, *args = self.spec.split(":")
        if kind == "const" and not args:
            return None
        try:
            lo, hi = (float(a) for a in args)
        except ValueError:
            lo = hi = -1.0
        if kind != "loguniform" or not (0 < lo <= hi and math.isfinite(hi)):
            raise WorkloadError(f"bad size distribution {self.spec!r}: use const or loguniform:LO:HI with 0 < LO <= HI")
        return lo, hi

    @property
    def mean(self) -> float:
        bounds = self.bounds
        if bounds is None or bounds[0] == bounds[1]:
            return bounds[0] if bounds else 1.0
        lo, hi = bounds
        return (hi - lo) / math.log(hi / lo)

    def sample(self, rng: np.random.Generator) -> float:
        bounds = self.bounds
        if bounds is None:
            return 1.0
        return float(math.exp(rng.uniform(math.log(bounds[0]), math.log(bounds[1]))))


@dataclass(frozen=True)
class JobSpec:
    """One arrival before it meets the cluster: time, graph, beta, iterations."""

    arrival_s: float
    graph: JobGraph
    beta: float
    iterations: int


MAX_LOAD = 100.0  # offered loads from here up are no setting anyone runs (no job is served at 1e9): refused everywhere


def load_problem(load: float) -> str | None:
    """Why ``load`` is no offered load, or None when it is one: the one rule of every ``--load``, config and stream."""
    if not 0 < load < MAX_LOAD:  # NaN fails too
        return f"an offered load is above 0 and below {MAX_LOAD:g} (1.0 offers as much work as the cluster serves)"
    return None


def check_load(load: float, what: str = "load") -> float:
    """``load`` when it is an offered load (:func:`load_problem`), else a one-line :class:`WorkloadError` naming ``what``."""
    problem = load_problem(load)
    if problem is not None:
        raise WorkloadError(f"{what} {load:g}: {problem}")
    return load


@dataclass(frozen=True)
class Workload:
    """A stream of jobs drawn uniformly from ``graphs``.

    ``arrival`` is ``"poisson"`` (exponential gaps) or ``"fixed"`` (PAC-ML's constant gap).
    The rate makes the offered load ``load`` = rate x mean sequential JCT / ``num_devices``:
    at load 1 the cluster receives exactly the work it could do with no partitioning overhead.
    ``iterations`` overrides every graph's own iteration count; ``size`` then scales it per job.
    ``sequential_iteration_s`` gives a graph's sequential seconds per iteration (the cost model's;
    default: the sum of its op times). ``structure`` adds a daily cycle, sweeps, recurring jobs or a
    trace's arrival times (:mod:`placer.workloads.structure`); the load stays the same.
    """

    graphs: Sequence[JobGraph]
    beta: BetaDistribution
    load: float
    num_devices: int
    num_jobs: int
    arrival: str = "poisson"
    iterations: int | None = None
    sequential_iteration_s: Callable[[JobGraph], float] | None = None
    size: SizeDistribution = SizeDistribution()
    structure: Structure = Structure()

    def __post_init__(self) -> None:
        if not self.graphs:
            raise WorkloadError("workload needs at least one graph")
        check_load(self.load)
        if self.num_jobs < 1:
            raise WorkloadError(f"number of jobs must be >= 1, got {self.num_jobs}")
        if self.arrival not in ("poisson", "fixed"):
            raise WorkloadError(f"arrival process must be 'poisson' or 'fixed', got {self.arrival!r}")

    def _iterations(self, graph: JobGraph) -> int:
        return self.iterations or graph.iterations

    @property
    def mean_job_length_s(self) -> float:
        """The mean sequential JCT of a job of this workload (seconds)."""
        seq = self.sequential_iteration_s or (lambda g: g.sequential_iteration_s)
        return float(np.mean([seq(g) * self._iterations(g) for g in self.graphs]) * self.size.mean)

    @property
    def mean_gap_s(self) -> float:
        """The mean gap between arrivals that gives the offered load (seconds)."""
        return self.mean_job_length_s / (self.load * self.num_devices)

    def jobs(self, rng: np.random.Generator) -> Iterator[JobSpec]:
        if not self.structure.independent:
            yield from self._structured_jobs(rng)
            return
        gap = self.mean_gap_s
        now = 0.0
        for _ in range(self.num_jobs):
            now += rng.exponential(gap) if self.arrival == "poisson" else gap
            graph, beta, iterations = self._draw(rng)
            yield JobSpec(now, graph, beta, iterations)

    def _draw(self, rng: np.random.Generator) -> tuple[JobGraph, float, int]:
        """One job's (graph, beta, iterations), drawn independently."""
        graph = self.graphs[int(rng.integers(len(self.graphs)))]
        beta = float(self.beta.sample(rng, 1)[0])
        iterations = self._iterations(graph)
        if self.size.bounds is not None:
            iterations = max(1, round(iterations * self.size.sample(rng)))
        return graph, beta, iterations

    def _structured_jobs(self, rng: np.random.Generator) -> list[JobSpec]:
        """The first ``num_jobs`` arrivals of the structured stream: background events (a sweep's
        copies spread over ``within`` seconds) merged with the recurring jobs' schedules."""
        recurring = self.structure.settings("recurring") or {"share": 0.0}
        gap = self.mean_gap_s
        event_gap = gap * self.structure.jobs_per_event() / (1 - recurring["share"])
        used = math.ceil(self.num_jobs * (1 - recurring["share"]) / self.structure.jobs_per_event())
        times = event_times(self.structure, self.num_jobs, event_gap, self.mean_job_length_s, rng, used)
        copies = sweep_sizes(self.structure, self.num_jobs, rng)
        sweeps = self.structure.settings("sweeps")
        within = sweeps["within"] * self.mean_job_length_s if sweeps is not None else 0.0
        arrivals: list[tuple[float, tuple[JobGraph, float, int]]] = []
        for start, n in zip(times.tolist(), copies.tolist(), strict=True):
            job = self._draw(rng)
            arrivals.append((start, job))
            arrivals.extend((start + offset, job) for offset in np.sort(rng.uniform(0, within, n - 1)).tolist())
        if recurring["share"] > 0:
            arrivals.extend(self._recurring(recurring, gap, float(times[-1]), rng))
        arrivals.sort(key=lambda a: a[0])
        return [JobSpec(t, *job) for t, job in arrivals[: self.num_jobs]]

    def _recurring(self, settings: dict, gap: float, horizon: float, rng: np.random.Generator):
        """(time, job) of each recurring job's returns up to ``horizon``: every ``period`` +/- jitter, from a random start."""
        templates = int(settings["templates"])
        period = templates * gap / settings["share"]
        for _ in range(templates):
            job = self._draw(rng)
            t = rng.uniform(0, period)
            while t <= horizon:
                yield max(0.0, t + rng.uniform(-1, 1) * settings["jitter"] * period), job
                t += period


def read_trace(path: str | Path, graphs: dict[str, JobGraph], resolve: Callable[[str], JobGraph] | None = None) -> list[JobSpec]:
    """Read a CSV trace with columns ``arrival_s,graph,beta,iterations`` (sorted by time).

    ``graph`` names one of ``graphs`` (else ``resolve(name)``, if given), optionally ``NAME@BATCH``:
    that graph rescaled to the batch size (:meth:`JobGraph.with_batch_size`).
    """
    known = dict(graphs)
    path = Path(path)
    reader = csv.DictReader(read_text(path, what="trace", error=WorkloadError).splitlines())
    try:
        rows = list(reader)
    except csv.Error as exc:  # a field over the csv module's 128 KiB limit
        raise WorkloadError(f"{path}:{reader.line_num}: {exc}") from None
    specs, last = [], 0.0
    for line, row in enumerate(rows, start=2):
        try:
            arrival, beta, iters = float(row["arrival_s"]), float(row["beta"]), int(row["iterations"])
            name = row["graph"]
        except (KeyError, TypeError, ValueError):
            raise WorkloadError(f"{path}:{line}: need arrival_s, graph, beta, iterations") from None
        if name not in known:
            known[name] = _trace_graph(name, known, resolve, f"{path}:{line}")
        if not (math.isfinite(arrival) and arrival >= last):
            raise WorkloadError(f"{path}:{line}: arrival_s must be finite and non-decreasing")
        if not (0 < beta <= 1) or iters < 1:
            raise WorkloadError(f"{path}:{line}: need 0 < beta <= 1 and iterations >= 1")
        specs.append(JobSpec(arrival, known[name], beta, iters))
        last = arrival
    if not specs:
        raise WorkloadError(f"{path}: trace has no jobs")
    return specs


def trace_load(jobs: Sequence[JobSpec], sequential_jct_s: Callable[[JobGraph, int], float], num_devices: int) -> float:
    """A replayed stream's offered load, as :class:`Workload` defines it: arrivals per second (``len - 1`` gaps over the
    span of arrival times) x the mean sequential JCT (``sequential_jct_s(graph, iterations)``, seconds) / ``num_devices``."""
    span = jobs[-1].arrival_s - jobs[0].arrival_s if jobs else 0.0
    if len(jobs) < 2 or span <= 0:
        raise WorkloadError("a trace's offered load needs two or more distinct arrival times")
    mean_s = float(np.mean([sequential_jct_s(job.graph, job.iterations) for job in jobs]))
    return (len(jobs) - 1) / span * mean_s / num_devices


def _trace_graph(name: str, known: dict[str, JobGraph], resolve, where: str) -> JobGraph:
    base, at, batch = name.partition("@")
    graph = known.get(base)
    if graph is None and resolve is not None:
        try:
            graph = resolve(base)
        except Exception as exc:  # resolve raises the catalog's own error: keep its message
            raise WorkloadError(f"{where}: {exc}") from None
    if graph is None:
        raise WorkloadError(f"{where}: unknown graph {base!r}")
    if not at:
        return graph
    if not batch.isdigit() or int(batch) < 1:
        raise WorkloadError(f"{where}: bad batch size in {name!r} (use NAME@BATCH, BATCH >= 1)")
    try:
        return graph.with_batch_size(int(batch))
    except Exception as exc:
        raise WorkloadError(f"{where}: {exc}") from None
