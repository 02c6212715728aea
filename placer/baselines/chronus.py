"""``chronus``: Chronus's deadline scheduler (Gao et al., "Chronus: A Novel Deadline-aware Scheduler for Deep Learning
Training Jobs", SoCC 2021) within placer's model: every job has a deadline, degrees are fixed, nothing is preempted.

A *lease* is a job's devices over a time window. A running job's lease runs to its finish (``view.free_at``): Chronus
renews a lease at every slice boundary, and with no preemption here a lease is never revoked, so a running job keeps
its devices until it completes. At each offer the policy plans leases, deadline first (earliest absolute deadline,
then job id):

1. *Demand*: a job's lease is the fewest devices that meet its deadline from the lease's start (its minimum
   satisfactory share), placed by consolidation: the fewest servers, the fullest server that fits first (``best_fit``,
   then ``first_fit``, ``spread``). A lease starts at the earliest moment (now, or when a running job's or an earlier
   lease's devices free up) at which such a placement exists; its devices are then reserved to its finish.
2. *Admission control* (with a queue): once per job, at the first offer after its arrival (jobs that arrived meanwhile
   in arrival order), a job is *admitted* when a plan of the jobs already admitted and it, deadline first, gives every
   one of them a lease; it then starts when its lease starts (held until then). A job that cannot be guaranteed is not
   admitted: it stays in the queue as *best-effort* and starts only on devices the admitted jobs' leases leave free at
   an offer (Chronus runs best-effort jobs on what the SLO jobs leave over). In the loss system (``--queue none``)
   nothing waits: a job is admitted when its lease can start now, else declined.
3. *Deadline-first order*: a run's queue offers jobs earliest deadline first, with backfilling (``edf-bf``), unless the
   name picks another order (``chronus@fifo``).

It is not elastic: Chronus does not scale a job (its GPU count is the one it asked for), and its time slicing (pausing
a job between leases) has no counterpart in placer's elastic hook, which moves a running job but never stops it. What is
simplified against the paper is listed in docs/elastic.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from placer.baselines.policy import Policy
from placer.baselines.specs import PolicySpec
from placer.sim.options import DEFAULT_MAX_DEGREE, Option, OptionTable, any_feasible, degrees_for
from placer.sim.queueing import QueueConfig
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject

CONSOLIDATING_RULES = ("best_fit", "first_fit", "spread")  # the placement rules a lease tries, in preference


class Lease(NamedTuple):
    """A job's devices from ``start_s`` to ``finish_s`` (absolute seconds)."""

    start_s: float
    devices: tuple[int, ...]
    finish_s: float


@dataclass
class Chronus(Policy):
    """Chronus (module docstring); ``max_degree`` caps a lease's devices."""

    max_degree: int = DEFAULT_MAX_DEGREE
    spec: PolicySpec | None = None
    _admitted: set[int] = field(default_factory=set, repr=False)  # waiting jobs guaranteed a lease
    _seen: set[int] = field(default_factory=set, repr=False)  # waiting jobs whose admission was decided
    _planned: tuple[dict[int, Lease], np.ndarray] = field(default_factory=lambda: ({}, np.zeros(0)), repr=False)  # last plan, free_at
    _planned_for: tuple | None = field(default=None, repr=False)  # the state it was made in (:meth:`_state`)

    def reset(self, rng: np.random.Generator) -> None:
        self._admitted, self._seen, self._planned_for = set(), set(), None

    def queue(self, queue: QueueConfig) -> QueueConfig:
        """Deadline first with backfilling (``edf-bf``), unless the name asks for another order."""
        if self.spec is not None and self.spec.discipline is not None:
            return self.spec.queue(queue)
        return QueueConfig(queue.capacity, "edf", True) if queue.enabled else queue

    def decide(self, job: Job, view: ClusterView) -> Decision:
        lease = self.lease_for(job, view)
        if lease is None or lease.start_s > view.now:
            return Reject()  # declined, or held until its lease starts
        self._admitted.discard(job.job_id)
        return Place(lease.devices)

    def lease_for(self, job: Job, view: ClusterView) -> Lease | None:
        """``job``'s lease in the plan (module docstring), once the waiting jobs not yet seen are admitted or not: when
        admitted, its guaranteed one; else, as best-effort, one that starts now on what the admitted jobs leave; None
        when it has neither."""
        if not view.queue.enabled:
            return self.lease(job, view, _free_at(view), now_only=True)
        waiting = {j.job_id: j for j in view.waiting}
        self._seen &= set(waiting)
        state = self._state(view, waiting)
        if state != self._planned_for:  # else the queue offers another job at the same moment, nothing changed: same plan
            self._planned = self._replan(view, waiting)
            self._planned_for = self._state(view, waiting)  # as the admissions just made left it
        plan, free_at = self._planned
        return plan[job.job_id] if job.job_id in plan else self.lease(job, view, free_at, now_only=True)

    def _state(self, view: ClusterView, waiting: dict[int, Job]) -> tuple:
        """All a plan depends on: the time, when each device is free, the waiting jobs, those admitted and those seen."""
        return view.now, _free_at(view).tobytes(), frozenset(waiting), frozenset(self._admitted), frozenset(self._seen)

    def _replan(self, view: ClusterView, waiting: dict[int, Job]) -> tuple[dict[int, Lease], np.ndarray]:
        """The admitted jobs' plan, once each waiting job not yet seen is admitted or not (module docstring)."""
        admitted = [j for j in waiting.values() if j.job_id in self._admitted]
        plan, free_at = self.plan(view, admitted)
        admitted = [j for j in admitted if j.job_id in plan]  # a job a plan no longer serves is best-effort from now on
        for new in (j for j in waiting.values() if j.job_id not in self._seen):  # each job's admission: once, in arrival order
            self._seen.add(new.job_id)
            with_new, free_at_with_new = self.plan(view, [*admitted, new])
            if len(with_new) == len(admitted) + 1:
                admitted.append(new)
                plan, free_at = with_new, free_at_with_new
        self._admitted = {j.job_id for j in admitted}
        return plan, free_at

    def plan(self, view: ClusterView, jobs: Iterable[Job]) -> tuple[dict[int, Lease], np.ndarray]:
        """Leases for ``jobs`` deadline first, each reserving its devices to its finish (a job with none is left out), and
        when each device is free once they are reserved."""
        free_at, leases = _free_at(view), {}
        for job in sorted(jobs, key=lambda j: (j.arrival_s + j.deadline_s, j.job_id)):
            lease = self.lease(job, view, free_at)
            if lease is not None:
                leases[job.job_id] = lease
                free_at[list(lease.devices)] = lease.finish_s
        return leases, free_at

    def lease(self, job: Job, view: ClusterView, free_at: np.ndarray, *, now_only: bool = False) -> Lease | None:
        """The earliest lease of ``job`` on devices free at ``free_at`` (absolute seconds) that meets its deadline: at
        the first moment some placement of its minimum satisfactory share does (``now_only``: now or never)."""
        starts = [view.now] if now_only else np.unique(free_at).tolist()  # sorted, each once
        for start in starts:
            if job.remaining_s(start) <= 0:
                break
            chosen = self.share(job, replace(view, now=start, free=free_at <= start))
            if chosen is not None and chosen.devices is not None and chosen.jct_s is not None:
                return Lease(start, chosen.devices, start + chosen.jct_s)
        return None

    def share(self, job: Job, view: ClusterView) -> Option | None:
        """The fewest devices free in ``view`` that meet ``job``'s deadline from ``view.now``, on the fewest servers (the
        first of :data:`CONSOLIDATING_RULES` among equals); None when no degree does."""
        degrees = degrees_for(view, self.max_degree)
        if not view.free.any() or not any_feasible(job, view, degrees=degrees, rules=CONSOLIDATING_RULES):
            return None
        # the options' feasibility as one array (no option built but the chosen one); min keeps the first of equals, the
        # preferred rule's, so an option that repeats an earlier rule's devices at its degree is never chosen over it
        table = OptionTable(job, view, degrees, CONSOLIDATING_RULES)
        placements, rules = table.table, len(CONSOLIDATING_RULES)
        chosen = min(
            np.flatnonzero(table.feasible), key=lambda i: (placements.degrees[i // rules], placements.shapes[placements.slots[i]].servers)
        )
        return table[int(chosen)]


def _free_at(view: ClusterView) -> np.ndarray:
    """When each device is next free (absolute seconds, now at the earliest): running jobs' leases run to their finish."""
    return np.maximum(view.free_at, view.now)
