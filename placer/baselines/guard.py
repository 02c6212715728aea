"""A gate on a policy's holds: below a measured load (and optionally near its deadline, or while few jobs wait), a job
the policy holds is placed as another policy places it.

A learned policy's holds (leaving a job in the queue, or rejecting it, where a placement was open) are its edge under
overload and its loss when the cluster is quiet (docs/learning.md, the ``overrides`` figure). :class:`Guarded` keeps
every placement of ``policy`` and every hold made while the offered load it measures is at or above ``below``; below
it, a hold is replaced by ``by``'s decision in the same state when that is a placement. The load is a
:class:`LoadMeter`'s over its default window (the last 96 arrivals; ``adaptive`` tunes its own window, 32 or 96).
``by`` sees every offer, so its own state (the sizes a quantile rule has seen, ``adaptive``'s meter) follows the run,
and its :meth:`stats` count those shadow decisions too; it is tuned as it would be alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from placer.baselines.policy import Policy, Tuning
from placer.baselines.specs import PolicySpec
from placer.sim.history import LoadMeter
from placer.sim.queueing import QueueConfig
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place
from placer.workloads.generator import JobSpec


@dataclass
class Guarded(Policy):
    """``policy``'s decisions, its holds below measured load ``below`` replaced by ``by``'s placements (module docstring).

    ``below = inf`` replaces every hold that ``by`` would place; before the meter reads a load (two arrivals apart in
    time), the load counts as low. ``last``: besides, replace a hold only when the job has less than ``last`` times the
    JCT of ``by``'s placement left before its deadline (its last chances to start in time; None: whatever the slack).
    ``waiting``: besides, replace a hold only while at most ``waiting`` jobs wait, the held one included (a queue the
    cluster is keeping up with, read from the state at the decision rather than averaged over arrivals; None: however
    many). :meth:`stats` reports the holds replaced.
    """

    policy: Policy
    by: Policy
    below: float = math.inf
    spec: PolicySpec | None = None
    last: float | None = None
    waiting: int | None = None
    overrides: int = field(default=0, init=False)
    _meter: LoadMeter = field(default_factory=LoadMeter, init=False, repr=False)

    def tuned(self, tuning: Tuning) -> Guarded:
        policy, by = self.policy.tuned(tuning), self.by.tuned(tuning)
        return self if policy is self.policy and by is self.by else replace(self, policy=policy, by=by)

    def reset(self, rng: np.random.Generator) -> None:
        self.policy.reset(rng)
        self.by.reset(rng)
        self.overrides, self._meter = 0, LoadMeter()

    def foresee(self, jobs: Sequence[JobSpec]) -> None:
        self.policy.foresee(jobs)
        self.by.foresee(jobs)

    def queue(self, queue: QueueConfig) -> QueueConfig:
        """The queue of the name's discipline (``@edf``) if it names one, else the one ``policy`` asks for."""
        return self.spec.queue(queue) if self.spec is not None else self.policy.queue(queue)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        decision, other = self.policy.decide(job, view), self.by.decide(job, view)
        self._meter.observe(job)
        if isinstance(decision, Place) or not isinstance(other, Place):
            return decision
        load = self._meter.load(view.cluster.num_devices)
        if load is not None and load >= self.below:
            return decision
        if self.waiting is not None and len(view.waiting) > self.waiting:
            return decision
        if self.last is not None and job.remaining_s(view.now) >= self.last * view.cost.jct_s(job.graph, other.devices, job.iterations):
            return decision
        self.overrides += 1
        return other

    def stats(self) -> dict[str, Any] | None:
        return {
            "overrides": self.overrides,
            "below": self.below,
            "last": self.last,
            "waiting": self.waiting,
            "policy": self.policy.stats(),
            "by": self.by.stats(),
        }
