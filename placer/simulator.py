"""Discrete-event cluster simulator (SimPy-style event heap, no RL).

Events sit in a heap of ``(time, priority, seq, event)``: completions (priority 0) free their
devices before arrivals (priority 1) at the same instant; ``seq`` keeps ties in insertion order.
On each arrival the simulator stops with the job in :attr:`Simulator.pending` until
:meth:`Simulator.decide` is called with a :class:`~placer.types.Decision`::

    sim = Simulator(cost_model, workload.jobs(rng))
    while (job := sim.next_job()) is not None:
        sim.decide(policy.decide(job, sim.view()))
    sim.run()  # drain the remaining completions
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from placer.cost import CostModel
from placer.types import BlockReason, Decision, Job, JobRecord, Outcome, Place, Reject
from placer.workload import JobSpec

_COMPLETION, _ARRIVAL = 0, 1


@dataclass(frozen=True)
class ClusterView:
    """A read-only snapshot for policies: which devices are free and when busy ones free up."""

    cost: CostModel
    now: float
    free: np.ndarray  # (N,) bool
    free_at: np.ndarray  # (N,) seconds (absolute) when each device is next free; ``now`` if free
    running: int  # number of running jobs

    @property
    def cluster(self):
        return self.cost.cluster

    @property
    def num_free(self) -> int:
        return int(self.free.sum())


class Simulator:
    """Runs jobs from ``jobs`` (sorted by arrival) on the cost model's cluster."""

    def __init__(self, cost: CostModel, jobs: Iterable[JobSpec]) -> None:
        self.cost = cost
        n = cost.cluster.num_devices
        self.now = 0.0
        self.free = np.ones(n, dtype=bool)
        self.free_at = np.zeros(n)
        self.records: list[JobRecord] = []
        self.pending: Job | None = None
        self.busy_timeline: list[tuple[float, int]] = [(0.0, 0)]
        self._heap: list[tuple[float, int, int, object]] = []
        self._seq = 0
        self._jobs: Iterator[JobSpec] = iter(jobs)
        self._next_id = 0
        self._running: dict[int, tuple[int, ...]] = {}
        self._push_next_arrival()

    # -- event loop -------------------------------------------------------------------
    def step(self) -> bool:
        """Process one event; False when no events are left. Refused while a job waits."""
        if self.pending is not None:
            raise RuntimeError("a job is waiting for a decision: call decide() first")
        if not self._heap:
            return False
        time, kind, _, payload = heapq.heappop(self._heap)
        self.now = time
        if kind == _COMPLETION:
            self._release(payload)
        else:
            self._arrive(payload)
        return True

    def run(self, until: float = math.inf) -> None:
        """Process events up to time ``until`` (all, by default), stopping at a pending job."""
        while self.pending is None and self._heap and self._heap[0][0] <= until:
            self.step()
        if until < math.inf and self.pending is None:
            self.now = max(self.now, until)

    def next_job(self) -> Job | None:
        """Advance to the next arrival and return it (None when no arrivals are left)."""
        while self.pending is None and self._has_arrivals() and self.step():
            pass
        return self.pending

    def view(self) -> ClusterView:
        free, free_at = self.free.copy(), self.free_at.copy()
        free.flags.writeable = free_at.flags.writeable = False
        return ClusterView(self.cost, self.now, free, free_at, len(self._running))

    # -- decisions --------------------------------------------------------------------
    def decide(self, decision: Decision) -> JobRecord:
        """Apply ``decision`` to the pending job and return its record."""
        job = self.pending
        if job is None:
            raise RuntimeError("no job is waiting for a decision")
        self.pending = None
        reason, jct = self.check(job, decision)
        if reason is not None:
            record = _record(job, Outcome.BLOCKED, reason, decision, None, None)
        else:
            devices = decision.devices
            finish = self.now + jct
            self.free[list(devices)] = False
            self.free_at[list(devices)] = finish
            self._running[job.job_id] = devices
            self._push(finish, _COMPLETION, job.job_id)
            self._mark_busy()
            strategy = self.cost.predict(job.graph, devices).strategy
            servers = len(set(self.cost.cluster.server_of[list(devices)].tolist()))
            record = _record(job, Outcome.ACCEPTED, None, decision, jct, finish, strategy.label if strategy else None, servers)
        self.records.append(record)
        return record

    def check(self, job: Job, decision: Decision) -> tuple[BlockReason | None, float | None]:
        """Why ``decision`` would block ``job`` now (None if it is accepted), and its JCT."""
        if isinstance(decision, Reject):
            return BlockReason.REJECTED, None
        if not isinstance(decision, Place):
            raise TypeError(f"decision must be Reject or Place, got {decision!r}")
        devices = decision.devices
        n = self.cost.cluster.num_devices
        if not devices or len(set(devices)) != len(devices) or any(not (0 <= d < n) for d in devices) or not self.free[list(devices)].all():
            return BlockReason.NO_CAPACITY, None
        if not self.cost.fits(job.graph, devices):
            return BlockReason.OUT_OF_MEMORY, None
        jct = self.cost.jct_s(job.graph, devices, job.iterations)
        if jct > job.deadline_s * (1 + 1e-9):
            return BlockReason.DEADLINE, jct
        return None, jct

    # -- internals --------------------------------------------------------------------
    def _arrive(self, spec: JobSpec) -> None:
        seq = self.cost.sequential_jct_s(spec.graph, spec.iterations)
        self.pending = Job(self._next_id, spec.graph, spec.arrival_s, spec.beta, spec.iterations, seq)
        self._next_id += 1
        self._push_next_arrival()

    def _release(self, job_id: int) -> None:
        devices = list(self._running.pop(job_id))
        self.free[devices] = True
        self.free_at[devices] = self.now
        self._mark_busy()

    def _mark_busy(self) -> None:
        busy = int((~self.free).sum())
        if self.busy_timeline[-1][0] == self.now:
            self.busy_timeline[-1] = (self.now, busy)
        else:
            self.busy_timeline.append((self.now, busy))

    def _has_arrivals(self) -> bool:
        return self._arrival_queued

    def _push_next_arrival(self) -> None:
        spec = next(self._jobs, None)
        self._arrival_queued = spec is not None
        if spec is not None:
            if spec.arrival_s < self.now:
                raise ValueError("jobs must be sorted by arrival time")
            self._push(spec.arrival_s, _ARRIVAL, spec)

    def _push(self, time: float, kind: int, payload: object) -> None:
        heapq.heappush(self._heap, (time, kind, self._seq, payload))
        self._seq += 1


def _record(job: Job, outcome, reason, decision: Decision, jct, finish, strategy: str | None = None, servers: int = 0) -> JobRecord:
    devices = decision.devices if isinstance(decision, Place) else ()
    return JobRecord(
        job_id=job.job_id,
        graph=job.graph.name,
        arrival_s=job.arrival_s,
        beta=job.beta,
        iterations=job.iterations,
        sequential_jct_s=job.sequential_jct_s,
        deadline_s=job.deadline_s,
        outcome=outcome,
        reason=reason,
        degree=len(devices),
        devices=tuple(int(d) for d in devices),
        jct_s=jct,
        finish_s=finish,
        strategy=strategy,
        servers=servers,
    )
