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
  declined, keeping room for cheaper jobs. ``lean:admit=Q:free=F`` holds a job larger than the
  ``Q`` quantile of the lengths seen while others wait or fewer than ``F`` of the devices are free.
- ``lookahead:k=K:h=H:m=M`` and ``hindsight:h=H:m=M``: the rollout planners of
  :mod:`placer.lookahead` (sampled futures; the stream's actual future, a clairvoyant reference).
"""

from __future__ import annotations

import bisect
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
    if kind == "lean" and (lean := _lean_options(arg)) is not None:
        return Lean(**common, **lean)
    if kind == "lookahead" and (planner := _lookahead_options(arg)) is not None:
        from placer.lookahead import Lookahead  # the planner builds on this module

        return Lookahead(**common, **planner)
    if kind == "hindsight" and (planner := _lookahead_options(arg)) is not None and "futures" not in planner:
        from placer.lookahead import Hindsight

        return Hindsight(**common, **planner)
    raise PolicyError(
        f"unknown policy {spec!r}: use para_max, para_min, fixed:K (1 <= K <= {max_degree}), random, lean, "
        "lean:cap=K:admit=Q:free=F, lookahead:k=K:h=H:m=M or hindsight:h=H:m=M, optionally +first_fit, +best_fit or +spread"
    )


def _key_values(arg: str, kinds: dict[str, type]) -> dict | None:
    """``a=1:b=0.5`` -> {"a": 1, "b": 0.5} for the keys in ``kinds``; None if malformed."""
    out: dict = {}
    for part in filter(None, arg.split(":")):
        key, eq, value = part.partition("=")
        if not eq or key not in kinds or key in out:
            return None
        try:
            out[key] = kinds[key](value)
        except ValueError:
            return None
    return out


def _lean_options(arg: str) -> dict | None:
    values = _key_values(arg, {"cap": int, "admit": float, "free": float})
    if values is None or values.get("cap", 1) < 1 or not 0 < values.get("admit", 0.5) <= 1 or not 0 <= values.get("free", 0.5) <= 1:
        return None
    return {"cap": values.get("cap"), "admit": values.get("admit"), "admit_free": values.get("free", 0.5)}


def _lookahead_options(arg: str) -> dict | None:
    """``k``, ``h``, ``m`` (the planner's) and ``admit``, ``free`` (its lean's)."""
    planner = {k: v for k, v in (p.partition("=")[::2] for p in filter(None, arg.split(":"))) if k in ("k", "h", "m")}
    lean = _lean_options(":".join(p for p in arg.split(":") if p.partition("=")[0] not in ("k", "h", "m")))
    values = _key_values(":".join(f"{k}={v}" for k, v in planner.items()), {"k": int, "h": int, "m": float})
    if lean is None or values is None or values.get("k", 1) < 1 or values.get("h", 1) < 1 or values.get("m", 0) < 0:
        return None
    renamed = {"k": "futures", "h": "horizon", "m": "margin"}
    return {renamed[k]: v for k, v in values.items()} | lean
