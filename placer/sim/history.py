"""What a stream has shown so far: arrival rates over several windows, how often a job recurred, the offered load.

:class:`ArrivalHistory` and :class:`LoadMeter` are online (they hold only jobs that have arrived) and
are shared by the policies that read history: the ``lean:admit=auto`` and ``adaptive`` heuristics and
the learned policy's ``history`` and ``meter`` observations, so that a win of the learned policy is not
a win of information.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field

from placer.sim.types import Job

RATE_WINDOWS = (8, 32, 128)  # arrivals
RECENT = 32  # arrivals looked back over for "this job came recently"
WINDOW = 96  # arrivals a LoadMeter averages the arrival rate over (by default)


def identity(job: Job) -> tuple:
    """What makes two arrivals the same job: graph, length and deadline fraction (a sweep's copies, a recurring job)."""
    return job.graph.key, job.iterations, round(job.beta, 6)


class ArrivalHistory:
    """Arrival times and identities of the jobs seen in one run, each counted once however often offered."""

    def __init__(self, keep: int = max(RATE_WINDOWS) * 2) -> None:
        self._seen: set[int] = set()
        self._times: deque[float] = deque(maxlen=keep)
        self._recent: deque[tuple] = deque(maxlen=RECENT)
        self._count: Counter = Counter()
        self._last_seen: dict[tuple, float] = {}
        self._first = math.nan
        self._arrivals = 0
        self._previous = {"count": 0, "since": math.inf, "recent": 0}

    def observe(self, job: Job) -> None:
        """Record ``job`` if it is new; what :meth:`recurrence` reports is then about this job's earlier copies."""
        if job.job_id in self._seen:
            return
        self._seen.add(job.job_id)
        key = identity(job)
        since = job.arrival_s - self._last_seen[key] if key in self._last_seen else math.inf
        self._previous = {"count": self._count[key], "since": since, "recent": self._recent.count(key)}
        if self._arrivals == 0:
            self._first = job.arrival_s
        self._arrivals += 1
        self._times.append(job.arrival_s)
        self._recent.append(key)
        self._count[key] += 1
        self._last_seen[key] = job.arrival_s

    @property
    def arrivals(self) -> int:
        return self._arrivals

    def mean_gap_s(self) -> float:
        """Mean gap between all arrivals so far (NaN before two)."""
        if self._arrivals < 2:
            return math.nan
        return (self._times[-1] - self._first) / (self._arrivals - 1)

    def rate_ratio(self, window: int) -> float:
        """Arrival rate over the last ``window`` arrivals over the long-run rate (1 before enough history)."""
        n = min(window, len(self._times) - 1)
        long_gap = self.mean_gap_s()
        if n < 2 or not long_gap > 0:
            return 1.0
        span = self._times[-1] - self._times[-1 - n]
        return long_gap * n / span if span > 0 else 64.0

    def trend(self, window: int = RATE_WINDOWS[1]) -> float:
        """Rate over the last ``window`` arrivals over the rate of the ``window`` before them (1 before enough history)."""
        if len(self._times) < 2 * window + 1:
            return 1.0
        recent = self._times[-1] - self._times[-1 - window]
        before = self._times[-1 - window] - self._times[-1 - 2 * window]
        if recent <= 0:
            return 64.0
        return before / recent if before > 0 else 1 / 64

    def recurrence(self) -> dict[str, float]:
        """About the last job observed: ``count`` of its earlier arrivals, seconds ``since`` the last one
        (inf if none), and how many of the ``RECENT`` arrivals before it were copies of it."""
        return dict(self._previous)


@dataclass
class LoadMeter:
    """The offered load: the arrival rate x the mean sequential JCT of every job seen, over the number of devices.

    The simulator numbers jobs in arrival order, so ``k`` ids apart are ``k`` arrivals, those that left without an
    offer included. With a queue a job may first be offered long after it arrived and after later jobs, so the rate
    is taken between the newest job seen (the highest id) and the one that was newest ``window`` ids before it.
    Sizes are drawn independently of time, so the mean sequential JCT is taken over every job seen (each once).
    """

    window: int = WINDOW
    _newest: deque[tuple[int, float]] = field(default_factory=deque, repr=False)  # (job id, arrival s), rising ids
    _seen: set[int] = field(default_factory=set, repr=False)
    _total_seq_s: float = 0.0

    def observe(self, job: Job) -> None:
        if job.job_id in self._seen:
            return  # offered again from the queue
        self._seen.add(job.job_id)
        self._total_seq_s += job.sequential_jct_s
        if not self._newest or job.job_id > self._newest[-1][0]:
            self._newest.append((job.job_id, job.arrival_s))
            while len(self._newest) > 2 and self._newest[-1][0] - self._newest[1][0] >= self.window:
                self._newest.popleft()

    @property
    def seen(self) -> int:
        return len(self._seen)

    def load(self, num_devices: int) -> float | None:
        """Offered load (arrival rate x mean sequential JCT / devices); None before two arrivals apart in time."""
        if len(self._newest) < 2:
            return None
        (first_id, first_s), (last_id, last_s) = self._newest[0], self._newest[-1]
        if last_s <= first_s:
            return None
        return (last_id - first_id) / (last_s - first_s) * (self._total_seq_s / len(self._seen)) / num_devices
