"""What a stream has shown so far: arrival rates over several windows and how often a job recurred.

:class:`ArrivalHistory` is online (it holds only jobs that have arrived) and is shared by the
policies that read history: the ``lean:admit=auto`` heuristic and the learned policy's
``history`` observation, so that a win of the learned policy is not a win of information.
"""

from __future__ import annotations

import math
from collections import Counter, deque

from placer.sim.types import Job

RATE_WINDOWS = (8, 32, 128)  # arrivals
RECENT = 32  # arrivals looked back over for "this job came recently"


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
        self._previous = {"count": self._count[key], "since": since, "recent": sum(k == key for k in self._recent)}
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
