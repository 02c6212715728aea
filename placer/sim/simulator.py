"""Discrete-event cluster simulator (SimPy-style event heap, no RL).

Events sit in a heap of ``(time, priority, seq, event)``: completions (priority 0) free their
devices before arrivals (priority 1) at the same instant, and a waiting job's expiry (priority 2)
comes last; ``seq`` keeps ties in insertion order. The simulator stops at each decision with the
job in :attr:`Simulator.pending` until :meth:`Simulator.decide` is called with a
:class:`~placer.sim.types.Decision`::

    sim = Simulator(cost_model, workload.jobs(rng), queue=QueueConfig.parse("edf-bf"))
    while (job := sim.next_job()) is not None:
        sim.decide(policy.decide(job, sim.view()))
    sim.run()  # drain the remaining completions

Without a queue (PAC-ML's loss system) each job is offered once, on arrival, and ``Reject``
blocks it. With a queue (:mod:`placer.sim.queueing`) every event with a device free is a decision
point: the waiting jobs are offered in the discipline's order, ``Place`` starts one and
``Reject`` holds it; a job leaves blocked when the queue is full on arrival, or when waiting
longer would miss its deadline even on the fastest placement (``Job.latest_start_s``).

Handed a ``rebalance`` callable the simulator is *elastic* (:mod:`placer.sim.elastic`): a decision may resize running
jobs (``Place.resizes``) and after the completions of an instant, while jobs run, ``rebalance(view)`` may resize them; without
one (the default) every job keeps its devices from start to finish and a resize is refused. Handed :data:`PULL` instead,
the caller answers those rebalance points itself as it answers jobs (a learning environment): :meth:`next_decision` gives
a job (answer with ``decide``) or a rebalance point's view (answer with ``rebalanced(resizes)``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, Literal, cast

import numpy as np

from placer.cost import CostModel, Prediction
from placer.sim import elastic
from placer.sim.elastic import ResizeError, RunningJob
from placer.sim.fastest import fastest_iteration_s, servable
from placer.sim.queueing import QueueConfig
from placer.sim.state import ClusterView, check_decision, job_record
from placer.sim.types import BlockReason, Decision, Job, JobRecord, Outcome, Place, Reject, Resize
from placer.workloads.generator import JobSpec

_COMPLETION, _ARRIVAL, _EXPIRY = 0, 1, 2
_LOSS = QueueConfig()  # the loss system
PULL: Final = "pull"  # ``rebalance=PULL``: the caller answers the rebalance points (next_decision, rebalanced)


class Simulator:
    """Runs jobs from ``jobs`` (sorted by arrival) on the cost model's cluster.

    ``busy``: devices already running something at time 0 (absolute seconds at which each frees
    up), for a simulation that starts from a snapshot (see :mod:`placer.baselines.lookahead`); ``waiting``:
    jobs already queued at that moment, offered at once except those in ``held`` (job ids);
    ``now``: its start time. ``rebalance``: makes the simulator elastic (module docstring); called with the view after
    the completions of each instant, it returns the running jobs to resize; :data:`PULL`: the caller answers those points
    (:meth:`next_decision`, :meth:`rebalanced`).
    """

    def __init__(
        self,
        cost: CostModel,
        jobs: Iterable[JobSpec],
        *,
        queue: QueueConfig | None = None,
        now: float = 0.0,
        busy_until: np.ndarray | None = None,
        waiting: Iterable[Job] = (),
        held: Iterable[int] = (),
        first_job_id: int = 0,
        rebalance: RebalanceFn | Literal["pull"] | None = None,
    ) -> None:
        self.cost = cost
        self._rebalance = rebalance
        self._pull = rebalance == PULL  # the caller answers the rebalance points
        self.rebalancing = False  # rebalance=PULL: a rebalance point waits for rebalanced()
        self._mid_instant = False  # ...and the events of its instant after it are still to process
        self._progress: dict[int, RunningJob] = {}  # elastic mode: running jobs by id
        self._record_at: dict[int, int] = {}  # elastic mode: a running job's index in ``records``
        self.queue = queue or _LOSS
        n = cost.cluster.num_devices
        self.now = now
        self.free = np.ones(n, dtype=bool)
        self.free_at = np.full(n, now)
        self.records: list[JobRecord] = []
        self.pending: Job | None = None
        self.busy_timeline: list[tuple[float, int]] = [(now, 0)]
        self._heap: list[tuple[float, int, int, object]] = []
        self._seq = 0
        self._jobs: Iterator[JobSpec] = iter(jobs)
        self._next_id = first_job_id
        self._running: dict[object, tuple[int, ...]] = {}
        self._waiting: dict[int, Job] = {}
        self._offers: list[Job] = []
        self._fastest: dict[int, float] = {}  # job id -> its fastest JCT on the idle cluster, until it is recorded
        if busy_until is not None:
            self._occupy_until(np.asarray(busy_until, dtype=float))
        for job in waiting:
            self._enqueue(job)
        self._push_next_arrival()
        self._open_decision_point()  # a snapshot with jobs waiting starts at a decision point
        skip = set(held)
        self._offers = [j for j in self._offers if j.job_id not in skip]

    # -- event loop -------------------------------------------------------------------
    def step(self) -> bool:
        """Process one event; False when no events are left. Refused while a job waits."""
        if self.pending is not None:
            raise RuntimeError("a job is waiting for a decision: call decide() first")
        if self.rebalancing:
            raise RuntimeError("a rebalance point waits: call rebalanced() first")
        if not self._heap:
            return False
        time, kind, _, payload = heapq.heappop(self._heap)
        self.now = time
        if kind == _COMPLETION:
            self._release(payload)
            rebalance = self._rebalance
            if rebalance is not None and self._progress and not (self._heap and self._heap[0][:2] == (time, _COMPLETION)):
                if isinstance(rebalance, str):  # PULL (self._pull): the caller answers it (next_decision, rebalanced)
                    self.rebalancing = True
                else:
                    self._resize(rebalance(self.view()))  # after the instant's last completion, while jobs run
        elif kind == _ARRIVAL:
            self._arrive(cast(JobSpec, payload))  # the kind tags its payload's type
        else:
            self._expire(cast(int, payload))
        return True

    def run(self, until: float = math.inf) -> None:
        """Process events up to time ``until`` (all, by default), stopping at a pending job; rebalance points on the way
        (:data:`PULL`) are answered with no resize."""
        while self.pending is None and self._heap and self._heap[0][0] <= until:
            if self.rebalancing:
                self.rebalanced(())
            self.step()
        if self.rebalancing:
            self.rebalanced(())
        if until < math.inf and self.pending is None:
            self.now = max(self.now, until)

    def next_job(self) -> Job | None:
        """Advance to the next job to decide and return it (None when no decisions are left).

        Events at one instant are all processed before its decision point. With :data:`PULL`, use :meth:`next_decision`.
        """
        self._advance()
        if self.rebalancing:
            raise RuntimeError("a rebalance point waits: read it with next_decision() and answer it with rebalanced()")
        return self.pending

    def next_decision(self) -> Job | ClusterView | None:
        """:meth:`next_job`, or with :data:`PULL` the view at a rebalance point when one comes first (answer it with
        :meth:`rebalanced`); None when no decisions are left (with :data:`PULL`, none once every job has finished)."""
        self._advance()
        return self.view() if self.rebalancing else self.pending

    def rebalanced(self, resizes: Sequence[Resize]) -> None:
        """Answer the waiting rebalance point: carry out ``resizes`` (checked all at once: :class:`ResizeError`)."""
        if not self.rebalancing:
            raise RuntimeError("no rebalance point waits")
        self._resize(resizes)
        self.rebalancing = False

    def record_of(self, job_id: int) -> JobRecord:
        """The record of a job that started in elastic mode (its latest, resizes told)."""
        return self.records[self._record_at[job_id]]

    def _advance(self) -> None:
        """Process events to the next pending job, rebalance point (:data:`PULL`) or the end of the decisions."""
        while self.pending is None and not self.rebalancing:
            if self._offers:
                self._offer_next()
                continue
            if self._mid_instant:  # a rebalance point stopped this instant: its other events, then its decision point
                self._mid_instant = False
            else:
                self._close_decision_point()
                # PULL: rebalance points until the last job finishes
                if not (self._heap and (self._arrival_queued or self._waiting or (self._pull and self._progress))):
                    break
                self.step()
            while not self.rebalancing and self._heap and self._heap[0][0] <= self.now:
                self.step()
            if self.rebalancing:
                self._mid_instant = True
                break
            self._open_decision_point()

    def view(self) -> ClusterView:
        free, free_at = self.free.copy(), self.free_at.copy()
        free.flags.writeable = free_at.flags.writeable = False
        waiting, jobs = tuple(self._waiting.values()), tuple(self._progress.values())
        return ClusterView(self.cost, self.now, free, free_at, len(self._running), waiting, self.queue, jobs, self.elastic)

    @property
    def elastic(self) -> bool:
        """Whether running jobs may be resized (the simulator was handed a ``rebalance`` callable)."""
        return self._rebalance is not None

    @property
    def waiting(self) -> tuple[Job, ...]:
        return tuple(self._waiting.values())

    # -- decisions --------------------------------------------------------------------
    def decide(self, decision: Decision) -> JobRecord | None:
        """Apply ``decision`` to the pending job; its record, or None when it is held in the queue."""
        job = self.pending
        if job is None:
            raise RuntimeError("no job is waiting for a decision")
        self.pending = None
        if isinstance(decision, Place) and decision.resizes:
            self._resize(decision.resizes)
        if isinstance(decision, Reject) and self.queue.enabled:
            if not self.queue.backfill:
                self._offers.clear()  # head of line: a held job stops the round
            return None
        reason, jct, prediction = self._check(job, decision)
        if reason is not None:
            return self._leave(job, reason, decision)
        assert isinstance(decision, Place) and jct is not None and prediction is not None  # accepted: a Place, its JCT
        self._start(job, decision.devices, jct, prediction)
        return self.records[-1]

    def check(self, job: Job, decision: Decision) -> tuple[BlockReason | None, float | None]:
        """Why ``decision`` would block ``job`` now (None if it is accepted), and its JCT."""
        reason, jct, _ = self._check(job, decision)
        return reason, jct

    def _check(self, job: Job, decision: Decision) -> tuple[BlockReason | None, float | None, Prediction | None]:
        """:meth:`check`, and the prediction on the devices once they fit (the cost model asked once)."""
        return check_decision(self.cost, self.free, self.now, job, decision)

    # -- internals --------------------------------------------------------------------
    def _start(self, job: Job, devices: tuple[int, ...], jct: float, prediction: Prediction) -> None:
        finish = self.now + jct
        self.free[list(devices)] = False
        self.free_at[list(devices)] = finish
        self._running[job.job_id] = devices
        self._waiting.pop(job.job_id, None)
        self._push(finish, _COMPLETION, job.job_id)
        self._mark_busy()
        strategy = prediction.strategy
        servers = self.cost.shape(devices).servers  # the servers the devices span
        label = strategy.label if strategy else None
        fastest = self._fastest.pop(job.job_id, None)
        wait = self.now - job.arrival_s
        self.records.append(job_record(job, Outcome.ACCEPTED, None, devices, jct, finish, label, servers, wait, fastest))
        if self.elastic:
            iteration_s = prediction.iteration_s
            self._progress[job.job_id] = elastic.start(job, devices, iteration_s, self.now, finish)
            self._record_at[job.job_id] = len(self.records) - 1

    def _resize(self, resizes: Sequence[Resize]) -> None:
        """Carry out ``resizes`` all at once (:func:`~placer.sim.elastic.plan_resizes` checks them first)."""
        if not resizes:
            return
        if not self.elastic:
            raise ResizeError("this simulator is not elastic: jobs keep their devices (hand it a rebalance callable)")
        changed = elastic.plan_resizes(self.cost, self.free, self._progress, resizes, self.now)
        for job_id in changed:
            old = list(self._progress[job_id].devices)
            self.free[old], self.free_at[old] = True, self.now
        for job_id, new in changed.items():
            devices = list(new.devices)
            self.free[devices], self.free_at[devices] = False, new.finish_s
            self._running[job_id], self._progress[job_id] = new.devices, new
            self._heap = [e for e in self._heap if e[1] != _COMPLETION or e[3] != job_id]
            heapq.heapify(self._heap)
            self._push(new.finish_s, _COMPLETION, job_id)
            i = self._record_at[job_id]
            self.records[i] = new.record(self.records[i])
        if changed:
            self._mark_busy()

    def _leave(self, job: Job, reason: BlockReason, decision: Decision | None = None) -> JobRecord:
        self._waiting.pop(job.job_id, None)
        devices = decision.devices if isinstance(decision, Place) else ()
        record = job_record(
            job, Outcome.BLOCKED, reason, devices, None, None, wait_s=self.now - job.arrival_s, fastest=self._fastest.pop(job.job_id, None)
        )
        self.records.append(record)
        return record

    def _arrive(self, spec: JobSpec) -> None:
        seq = self.cost.sequential_jct_s(spec.graph, spec.iterations)
        fastest = self._fastest_jct_s(spec)  # computed in the loss system too: it decides which jobs are avoidable
        job = Job(self._next_id, spec.graph, spec.arrival_s, spec.beta, spec.iterations, seq, fastest if self.queue.enabled else 0.0)
        self._fastest[job.job_id] = fastest
        self._next_id += 1
        self._push_next_arrival()
        if not self.queue.enabled:
            self._waiting[job.job_id] = job
        elif math.isinf(fastest):
            self._leave(job, BlockReason.OUT_OF_MEMORY)  # fits on no placement of the cluster
        elif not servable(job, fastest):
            self._leave(job, BlockReason.DEADLINE)  # not even the fastest placement meets the deadline
        else:
            self._enqueue(job)

    def _enqueue(self, job: Job) -> None:
        self._waiting[job.job_id] = job
        self._push(job.latest_start_s + 1e-9 * max(1.0, job.deadline_s), _EXPIRY, job.job_id)

    def _expire(self, job_id: int) -> None:
        job = self._waiting.get(job_id)
        if job is not None:
            self._leave(job, BlockReason.EXPIRED)

    def _open_decision_point(self) -> None:
        if not self._waiting:
            return
        if not self.queue.enabled:
            self._offers = list(self._waiting.values())  # the loss system asks even when nothing is free
        elif self.free.any():
            self._offers = self.queue.order(self._waiting.values())

    def _offer_next(self) -> None:
        job = self._offers.pop(0)
        if job.job_id not in self._waiting or (self.queue.enabled and not self.free.any()):
            if self.queue.enabled and not self.free.any():
                self._offers.clear()
            return
        self.pending = job

    def _close_decision_point(self) -> None:
        """Jobs the decision point left waiting: blocked in the loss system; the newest beyond capacity, queue full."""
        if not self.queue.enabled:
            for job in list(self._waiting.values()):
                self._leave(job, BlockReason.REJECTED)
            return
        while len(self._waiting) > self.queue.capacity:
            newest = max(self._waiting.values(), key=lambda j: (j.arrival_s, j.job_id))
            self._leave(newest, BlockReason.QUEUE_FULL)

    def _fastest_jct_s(self, spec: JobSpec) -> float:
        return fastest_iteration_s(self.cost, spec.graph) * spec.iterations

    def _release(self, job_id: object) -> None:
        devices = list(self._running.pop(job_id))
        if isinstance(job_id, int) and self._progress.pop(job_id, None) is not None:
            del self._record_at[job_id]
        self.free[devices] = True
        self.free_at[devices] = self.now
        self._mark_busy()

    def _occupy_until(self, busy_until: np.ndarray) -> None:
        """Devices busy until given times (> now), as one pseudo-job per distinct time."""
        for k, t in enumerate(sorted({float(t) for t in busy_until if t > self.now})):
            devices = tuple(int(d) for d in np.flatnonzero(busy_until == t))
            self.free[list(devices)] = False
            self.free_at[list(devices)] = t
            self._running[("busy", k)] = devices
            self._push(t, _COMPLETION, ("busy", k))
        self._mark_busy()

    def _mark_busy(self) -> None:
        busy = len(self.free) - int(np.count_nonzero(self.free))
        if self.busy_timeline[-1][0] == self.now:
            self.busy_timeline[-1] = (self.now, busy)
        else:
            self.busy_timeline.append((self.now, busy))

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


RebalanceFn = Callable[[ClusterView], Sequence[Resize]]
