"""``best`` and ``single-best``: the best member of every heuristic family, per workload or pooled over them; ``elastic-best``:
the best of the elastic and deadline schedulers per workload.

Each candidate of :data:`BEST_CANDIDATES` runs on the tuning streams of the workload (apart from the
evaluated ones: :class:`~placer.baselines.policy.Tuning`); the one with the least mean avoidable blocking
(blocked among the jobs some policy could accept, :mod:`placer.sim.metrics`) is the policy, ties going to
the first listed. ``best`` chooses per workload (one load, beta distribution, queue, cluster): what a
policy that knew the regime could do. ``single-best`` chooses once, on the mean over every workload of
the evaluation (all its loads and beta distributions, :attr:`Tuning.regimes`): the one configuration an
operator would deploy without knowing the regime. Their :meth:`Best.stats` say which was chosen and what
each candidate blocked.

``elastic-best`` chooses the same way among :data:`ELASTIC_CANDIDATES` (ElasticFlow, Chronus, and elastic lean with each of
lean's admissions and rules), each tuned on elastic runs: the elastic families tuned per regime the way ``best`` tunes the
fixed ones. Its runs are elastic; a member that is not (Chronus) never resizes, so its run is the member's own.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from placer.baselines.policy import Policy, Tuning
from placer.baselines.specs import PolicySpec
from placer.common.errors import PolicyError
from placer.sim.engine.program import Program
from placer.sim.queueing import QueueConfig
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Resize

BEST_CANDIDATES = (
    *(f"{kind}{rule}" for kind in ("para_max", "para_min") for rule in ("", "+best_fit", "+spread")),
    *(f"fixed:{k}" for k in (2, 4, 8, 16)),
    *(f"lean{admit}{rule}" for rule in ("+best_fit", "") for admit in ("", ":admit=0.8", ":admit=0.9", ":admit=0.95")),
    *(f"eff:{e}" for e in (0.5, 0.7, 0.9)),
    *(f"switch:{u}" for u in (0.25, 0.5, 0.75)),
)
ELASTIC_CANDIDATES = (
    *(f"elastic_lean{admit}{rule}" for rule in ("+best_fit", "") for admit in ("", ":admit=0.8", ":admit=0.9", ":admit=0.95")),
    "elasticflow",
    "chronus",
)
TUNING_METRIC = "avoidable_blocking_rate"


@dataclass
class Best(Policy):
    """``best`` (``single-best`` when :attr:`pooled`): delegates to the candidate (name -> policy) chosen by :meth:`tuned`;
    unusable before."""

    candidates: Mapping[str, Policy]
    spec: PolicySpec | None = None
    chosen: str | None = None
    tuning_blocking: dict[str, float] | None = field(default=None, repr=False)
    _policy: Policy | None = field(default=None, repr=False)
    pooled: bool = False  # single-best: choose on the mean over every workload of the evaluation

    def tuned(self, tuning: Tuning) -> Best:
        """A copy that runs the candidate with the least mean avoidable blocking on the tuning streams (of this
        workload, or with :attr:`pooled` of every workload of the evaluation, each weighted equally)."""
        regimes = tuning.pooled if self.pooled else (tuning,)
        blocking = {
            name: float(np.mean([regime.blocking(policy, TUNING_METRIC) for regime in regimes])) for name, policy in self.candidates.items()
        }
        chosen = min(self.candidates, key=lambda name: blocking[name])  # min keeps the first of equals
        return type(self)(self.candidates, self.spec, chosen, blocking, copy.deepcopy(self.candidates[chosen]), self.pooled)

    def reset(self, rng: np.random.Generator) -> None:
        if self._policy is not None:
            self._policy.reset(rng)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if self._policy is None:
            raise PolicyError(f"{self.name} must be tuned on a workload first (placer evaluate does it)")
        return self._policy.decide(job, view)

    def stats(self) -> dict[str, Any] | None:
        return None if self.chosen is None else {"chosen": self.chosen, "tuning_blocking": self.tuning_blocking}

    def program(self) -> Program | None:
        """The chosen candidate's program (None before tuning: its decide says why)."""
        return self._policy.program() if self._policy is not None else None


@dataclass
class ElasticBest(Best):
    """``elastic-best`` (module docstring): :class:`Best` over elastic candidates, whose chosen member also resizes and
    orders the queue as it would alone."""

    elastic: ClassVar[bool] = True

    def rebalance(self, view: ClusterView) -> Sequence[Resize]:
        return self._policy.rebalance(view) if self._policy is not None and self._policy.elastic else ()

    def queue(self, queue: QueueConfig) -> QueueConfig:
        """The queue its name asks for (``elastic-best@fifo``), as the chosen member orders it (Chronus: deadline first),
        as each candidate ran in tuning."""
        named = super().queue(queue)
        return self._policy.queue(named) if self._policy is not None else named
