"""Heuristic policies: the baselines a learned policy must beat.

Policy names (``placer evaluate --policies``), each optionally ``+RULE`` to pick the placement
rule (``first_fit`` by default; see :mod:`placer.cluster.placement`):

- ``para_max``: the largest degree (up to 16) that has free devices and fits in memory,
  deadline or not (PAC-ML's Para_max).
- ``para_min``: the smallest degree that meets the deadline (PAC-ML's Para_min).
- ``fixed:K``: always degree ``K``; declines when that is infeasible.
- ``random``: a uniformly random degree among those with enough free devices.
- ``lean``: over every degree and every placement rule, the feasible choice with the least
  device-time (degree x JCT); device-times within ``LEAN_TIE`` (0.1 %) of the least count as
  equal, and among those the fewest devices win, then the shorter JCT (with linear scaling,
  which data parallelism often gives, every degree ties and the thrifty choice keeps devices
  free). ``lean:cap=K`` adds admission control: jobs that would need more than ``K`` devices are
  declined, keeping room for cheaper jobs. ``lean:admit=Q:free=F`` holds a job larger than the
  ``Q`` quantile of the lengths seen while others wait or fewer than ``F`` of the devices are free.
- ``lookahead:k=K:h=H:m=M`` and ``hindsight:h=H:m=M``: the rollout planners of
  :mod:`placer.baselines.lookahead` (sampled futures; the stream's actual future, a clairvoyant reference).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from placer.cluster.placement import PLACEMENT_RULES
from placer.sim.options import DEFAULT_MAX_DEGREE, Option, degrees_for, options
from placer.sim.simulator import ClusterView
from placer.sim.types import Decision, Job, Place, Reject

LEAN_TIE = 1e-3


@dataclass
class Heuristic:
    """Base of the heuristics: ``decide(job, view)`` picks a :class:`~placer.sim.types.Decision`."""

    rule: str = "first_fit"
    max_degree: int = DEFAULT_MAX_DEGREE
    name: str = ""
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0), repr=False)

    def reset(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def decide(self, job: Job, view: ClusterView) -> Decision:
        chosen = self.choose(job, view, options(job, view, degrees=degrees_for(view, self.max_degree), rules=(self.rule,)))
        return Place(chosen.devices) if chosen is not None else Reject()

    def choose(self, job: Job, view: ClusterView, table: list[Option]) -> Option | None:
        raise NotImplementedError


class ParaMax(Heuristic):
    def choose(self, job, view, table):
        return next((o for o in reversed(table) if o.fits), None)


class ParaMin(Heuristic):
    def choose(self, job, view, table):
        return next((o for o in table if o.feasible), None)


@dataclass
class Fixed(Heuristic):
    degree: int = 1

    def choose(self, job, view, table):
        return next((o for o in table if o.degree == self.degree and o.devices is not None), None)


class RandomDegree(Heuristic):
    def choose(self, job, view, table):
        placeable = [o for o in table if o.devices is not None]
        return placeable[int(self.rng.integers(len(placeable)))] if placeable else None


@dataclass
class Lean(Heuristic):
    cap: int | None = None
    admit: float | None = None  # size admission: the quantile above which a job is "large"
    admit_free: float = 0.5  # large jobs start only with this fraction of devices free and nobody else waiting
    _sizes: list[float] = field(default_factory=list, repr=False)
    _seen: set[int] = field(default_factory=set, repr=False)

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._sizes, self._seen = [], set()

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if self.admit is not None and self._large(job, view):
            return Reject()
        degrees = degrees_for(view, min(self.max_degree, self.cap or self.max_degree))
        table = options(job, view, degrees=degrees, rules=tuple(PLACEMENT_RULES), distinct=True)
        feasible = [o for o in table if o.feasible]
        if not feasible:
            return Reject()
        least = min(o.device_seconds for o in feasible)
        thrifty = [o for o in feasible if o.device_seconds <= least * (1 + LEAN_TIE)]
        best = min(thrifty, key=lambda o: (o.degree, o.jct_s, o.device_seconds))
        return Place(best.devices)

    def _large(self, job: Job, view: ClusterView) -> bool:
        """True when ``job`` should wait (or be declined) under the size admission rule."""
        if job.job_id not in self._seen:
            self._seen.add(job.job_id)
            bisect.insort(self._sizes, job.sequential_jct_s)
        threshold = self._sizes[min(len(self._sizes) - 1, int(self.admit * len(self._sizes)))]
        if job.sequential_jct_s <= threshold:
            return False
        return len(view.waiting) > 1 or view.num_free < self.admit_free * view.cluster.num_devices
