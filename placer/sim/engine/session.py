"""The simulator's stepping API over the compiled engine, for a caller that answers each offer itself (the learning
environment): :class:`EngineSimulator` is :class:`~placer.sim.simulator.Simulator` without snapshots or resizes.

    sim = EngineSimulator(cost, jobs, queue=QueueConfig.parse("edf-bf"))
    while (job := sim.next_job()) is not None:
        sim.decide(policy.decide(job, sim.view()))
    sim.run()  # nothing left: the engine drained the completions when the last decision was made
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from placer.cost import CostModel
from placer.sim.elastic import ResizeError
from placer.sim.queueing import QueueConfig
from placer.sim.state import ClusterView, check_decision
from placer.sim.types import BlockReason, Decision, Job, JobRecord, Resize
from placer.workloads.generator import JobSpec

from . import codes as k
from .program import external
from .stream import Stream


class EngineSimulator:
    """``jobs`` (sorted by arrival, iterations > 0) on ``cost``'s cluster with ``queue`` (the loss system by default),
    stepped one decision at a time: the reference simulator's records, timeline and offers (tests/placer/sim).

    With ``screen=(max_degree, rules)`` it offers only the jobs with a feasible option at degrees 1..max_degree x
    ``rules`` and rejects the others itself (:func:`~placer.sim.engine.program.external`), as a caller that rejects
    such jobs unasked would; :meth:`screened` names them."""

    def __init__(
        self, cost: CostModel, jobs: Iterable[JobSpec], *, queue: QueueConfig | None = None,
        screen: tuple[int, tuple[str, ...]] | None = None,
    ) -> None:  # fmt: skip
        self.cost, self.queue, self.screening = cost, queue or QueueConfig(), screen is not None
        self._stream = Stream(cost, list(jobs), external(cost.cluster.num_devices, screen), self.queue)
        self.pending: Job | None = None
        self._records: list[JobRecord] = []

    def next_job(self) -> Job | None:
        """Advance to the next job to decide and return it (None when no decisions are left)."""
        if self.pending is None and self._stream.status != k.DONE:
            if self._stream.advance() == k.ASK:
                self.pending = self._stream.pending_job()
        return self.pending

    next_decision = next_job  # without resizes every decision point is a job's

    def view(self) -> ClusterView:
        return self._stream.view()

    def screened(self) -> np.ndarray:
        """(n, 3) int64: the offers rejected unasked since the last call, in order (screening: the constructor's
        ``screen``): each one's job id, the number of jobs waiting and of devices free then."""
        return self._stream.screened()

    def job(self, job_id: int) -> Job:
        """The stream's job ``job_id``, as it was offered."""
        return self._stream.job(job_id)

    def decide(self, decision: Decision) -> JobRecord | None:
        """Apply ``decision`` to the pending job; its record, or None when it is held in the queue."""
        job = self.pending
        if job is None:
            raise RuntimeError("no job is waiting for a decision")
        before = self._stream.recorded
        self._stream.answer(decision)
        self.pending = None
        self._stream.apply()
        for record in self.records[before:]:
            if record.job_id == job.job_id:
                return record
        return None

    def check(self, job: Job, decision: Decision) -> tuple[BlockReason | None, float | None]:
        """Why ``decision`` would block ``job`` now (None if it is accepted), and its JCT."""
        reason, jct, _ = check_decision(self.cost, self._stream.free, self.now, job, decision)
        return reason, jct

    def run(self) -> None:
        """Process the remaining events, stopping at a pending job (as :meth:`Simulator.run`)."""
        if self.pending is None:
            self.next_job()

    def record_of(self, job_id: int) -> JobRecord:
        raise ResizeError("this simulator is not elastic: jobs keep their devices (hand it a rebalance callable)")

    def rebalanced(self, resizes: Sequence[Resize]) -> None:
        raise RuntimeError("no rebalance point waits")

    @property
    def now(self) -> float:
        return self._stream.now

    @property
    def waiting(self) -> tuple[Job, ...]:
        return self._stream.view().waiting

    @property
    def elastic(self) -> bool:
        return False

    @property
    def records(self) -> list[JobRecord]:
        """Every job recorded so far, in the order the reference records them."""
        self._records.extend(self._stream.records(len(self._records)))
        return self._records

    @property
    def busy_timeline(self) -> list[tuple[float, int]]:
        return self._stream.timeline()

    @property
    def free(self) -> np.ndarray:
        return self._stream.free.copy()
