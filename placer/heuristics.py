"""Heuristic policies: the baselines a learned policy must beat.

Policy names (``placer evaluate --policies``), each optionally ``+RULE`` to pick the placement
rule (``first_fit`` by default; see :mod:`placer.placement`):

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
  declined, keeping room for cheaper jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from placer.errors import PolicyError
from placer.options import DEFAULT_MAX_DEGREE, Option, degrees_for, options
from placer.placement import PLACEMENT_RULES
from placer.simulator import ClusterView
from placer.types import Decision, Job, Place, Reject

LEAN_TIE = 1e-3


@dataclass
class Heuristic:
    """Base of the heuristics: ``decide(job, view)`` picks a :class:`~placer.types.Decision`."""

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

    def decide(self, job: Job, view: ClusterView) -> Decision:
        degrees = degrees_for(view, min(self.max_degree, self.cap or self.max_degree))
        table = options(job, view, degrees=degrees, rules=tuple(PLACEMENT_RULES))
        feasible = [o for o in table if o.feasible]
        if not feasible:
            return Reject()
        least = min(o.device_seconds for o in feasible)
        thrifty = [o for o in feasible if o.device_seconds <= least * (1 + LEAN_TIE)]
        best = min(thrifty, key=lambda o: (o.degree, o.jct_s, o.device_seconds))
        return Place(best.devices)


def make_heuristic(spec: str, *, max_degree: int = DEFAULT_MAX_DEGREE) -> Heuristic:
    """Build a heuristic from its name, e.g. ``para_min``, ``fixed:8+best_fit``, ``lean:cap=8``."""
    base, _, rule = spec.partition("+")
    rule = rule or "first_fit"
    if rule not in PLACEMENT_RULES:
        raise PolicyError(f"unknown placement rule {rule!r} in {spec!r} (rules: {', '.join(PLACEMENT_RULES)})")
    kind, _, arg = base.partition(":")
    common = {"rule": rule, "max_degree": max_degree, "name": spec}
    if kind == "para_max" and not arg:
        return ParaMax(**common)
    if kind == "para_min" and not arg:
        return ParaMin(**common)
    if kind == "random" and not arg:
        return RandomDegree(**common)
    if kind == "fixed" and arg.isdigit() and 1 <= int(arg) <= max_degree:
        return Fixed(**common, degree=int(arg))
    if kind == "lean" and (not arg or (arg.startswith("cap=") and arg[4:].isdigit() and int(arg[4:]) >= 1)):
        return Lean(**common, cap=int(arg[4:]) if arg else None)
    raise PolicyError(
        f"unknown policy {spec!r}: use para_max, para_min, fixed:K (1 <= K <= {max_degree}), random, lean or lean:cap=K, "
        "optionally +first_fit, +best_fit or +spread"
    )
