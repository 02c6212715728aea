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
  equal, and among those the fewest devices win, then the shorter JCT, then the rule ``+RULE`` names
  (``first_fit`` by default; ``lean+best_fit`` fills the fullest server that fits). With linear scaling,
  which data parallelism often gives, every degree ties and the thrifty choice keeps devices
  free. ``lean:cap=K`` adds admission control: jobs that would need more than ``K`` devices are
  declined, keeping room for cheaper jobs. ``lean:admit=Q:free=F`` holds a job larger than the
  ``Q`` quantile of the lengths seen while others wait or fewer than ``F`` of the devices are free.
  ``lean:admit=auto`` sets ``Q`` online from the arrival history (:class:`AutoAdmission`: stricter
  while arrivals come faster than their long-run rate); ``lean:admit=best`` is the best fixed ``Q``
  of :data:`ADMIT_GRID` for the workload, chosen on other streams than those it is evaluated on
  (:class:`BestLean`; :mod:`placer.evaluate.runner` tunes it).
- ``eff:E``: the largest degree whose parallel efficiency (sequential JCT / (degree x JCT)) is at
  least ``E`` (0 < E <= 1) among those that meet the deadline; the smallest degree that meets it when
  none is that efficient.
- ``switch:U``: wide while the cluster is quiet, lean when it is busy: the largest degree that meets
  the deadline (para_max's choice, never a placement that misses it) while no other job waits and
  more than a fraction ``U`` of the devices are free; ``lean`` otherwise.
- ``best``: the best member of every family (:data:`placer.baselines.best.BEST_CANDIDATES`), chosen per
  workload on tuning streams apart from the evaluated ones (:mod:`placer.baselines.best`).
- ``lookahead:k=K:h=H:m=M`` and ``hindsight:h=H:m=M``: the rollout planners of
  :mod:`placer.baselines.lookahead` (sampled futures; the stream's actual future, a clairvoyant reference).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from placer.baselines.policy import Policy, Tuning
from placer.baselines.specs import PolicySpec
from placer.cluster.placement import DEFAULT_RULE, PLACEMENT_RULES
from placer.common.errors import PolicyError
from placer.sim.engine.program import Program
from placer.sim.history import ArrivalHistory
from placer.sim.options import DEFAULT_MAX_DEGREE, Option, OptionTable, any_feasible, degrees_for
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Reject

LEAN_TIE = 1e-3
ADMIT_GRID = (0.8, 0.85, 0.9, 0.95, 1.0)  # the thresholds lean:admit=best chooses from


@dataclass
class Heuristic(Policy):
    """Base of the heuristics: ``decide(job, view)`` picks a :class:`~placer.sim.types.Decision`."""

    rule: str = DEFAULT_RULE
    max_degree: int = DEFAULT_MAX_DEGREE
    spec: PolicySpec | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0), repr=False)

    def reset(self, rng: np.random.Generator) -> None:
        self.rng = rng

    feasible_only: ClassVar[bool] = False  # choose() picks only feasible options: skip the table when there is none

    def decide(self, job: Job, view: ClusterView) -> Decision:
        degrees = degrees_for(view, self.max_degree)
        if self.feasible_only and not any_feasible(job, view, degrees=degrees, rules=(self.rule,)):
            return Reject()
        chosen = self.choose(job, view, OptionTable(job, view, degrees, (self.rule,)))
        return chosen.place() if chosen is not None else Reject()

    def choose(self, job: Job, view: ClusterView, table: Sequence[Option]) -> Option | None:
        """The option to take from ``table`` (:func:`~placer.sim.options.options`' order; each built when first read)."""
        raise NotImplementedError

    def _program(self, kind: str, **params) -> Program:
        return Program(kind, (self.rule,), self.max_degree, **params)


class ParaMax(Heuristic):
    def program(self) -> Program | None:
        return self._program("para_max") if type(self) is ParaMax else None

    def choose(self, job, view, table):
        return next((o for o in reversed(table) if o.fits), None)


class ParaMin(Heuristic):
    feasible_only = True

    def program(self) -> Program | None:
        return self._program("para_min") if type(self) is ParaMin else None

    def choose(self, job, view, table):
        return next((o for o in table if o.feasible), None)


@dataclass
class Fixed(Heuristic):
    degree: int = 1

    def program(self) -> Program | None:
        return self._program("fixed", fixed=self.degree) if type(self) is Fixed else None

    def choose(self, job, view, table):
        return next((o for o in table if o.degree == self.degree and o.devices is not None), None)


class RandomDegree(Heuristic):
    def choose(self, job, view, table):
        placeable = [o for o in table if o.devices is not None]
        return placeable[int(self.rng.integers(len(placeable)))] if placeable else None


@dataclass
class Efficient(Heuristic):
    """``eff:E`` (module docstring)."""

    efficiency: float = 0.5
    feasible_only = True

    def program(self) -> Program | None:
        return self._program("eff", efficiency=self.efficiency) if type(self) is Efficient else None

    def choose(self, job, view, table):
        feasible = [o for o in table if o.feasible]
        efficient = [o for o in feasible if job.sequential_jct_s >= self.efficiency * o.degree * o.jct_s]
        return efficient[-1] if efficient else feasible[0] if feasible else None


@dataclass(frozen=True)
class AutoAdmission:
    """``lean:admit=auto``: the admission quantile from the arrival history.

    While the last ``window`` arrivals came faster than the long-run rate the threshold is
    ``busy`` (more jobs count as large and wait), else ``calm``. The same history the learned
    policy observes (:class:`placer.sim.history.ArrivalHistory`).
    """

    window: int = 20
    calm: float = 0.95
    busy: float = 0.85

    def quantile(self, history: ArrivalHistory) -> float:
        return self.busy if history.rate_ratio(self.window) > 1 else self.calm


@dataclass
class Lean(Heuristic):
    cap: int | None = None
    admit: float | AutoAdmission | None = None  # size admission: the quantile above which a job is "large"
    admit_free: float = 0.5  # large jobs start only with this fraction of devices free and nobody else waiting
    _sizes: list[float] = field(default_factory=list, repr=False)
    _seen: set[int] = field(default_factory=set, repr=False)
    _arrival_history: ArrivalHistory = field(default_factory=ArrivalHistory, repr=False)

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._sizes, self._seen, self._arrival_history = [], set(), ArrivalHistory()

    def program(self) -> Program | None:
        """Lean's program (with a fixed admission quantile; the online one, ``admit=auto``, has none)."""
        if type(self) not in (Lean, BestLean, Switch) or isinstance(self.admit, AutoAdmission):
            return None
        if type(self) is BestLean and self.admit is None:
            return None  # untuned: its decide says so
        kind = "switch" if isinstance(self, Switch) else "lean"
        quiet = self.quiet_free if isinstance(self, Switch) else 0.0
        return Program(kind, self.rules_in_preference(), self.max_degree, cap=self.cap or 0, quiet_free=quiet, admit=self.admit,
                       admit_free=self.admit_free, tie=LEAN_TIE)  # fmt: skip

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if self.admit is not None and self._large(job, view, self.admit):
            return Reject()
        chosen = self.thrifty(job, view)
        return chosen.place() if chosen is not None else Reject()

    def thrifty(self, job: Job, view: ClusterView) -> Option | None:
        """Lean's choice on ``view``'s free devices, admission aside (None: nothing feasible)."""
        degrees = degrees_for(view, min(self.max_degree, self.cap or self.max_degree))
        rules = self.rules_in_preference()
        if not any_feasible(job, view, degrees=degrees, rules=rules):
            return None
        table = OptionTable(job, view, degrees, rules)
        chosen = table.thriftiest(LEAN_TIE)  # of equals, the first: the preferred rule's
        return table[chosen] if chosen is not None else None

    def rules_in_preference(self) -> tuple[str, ...]:
        """Every placement rule, :attr:`rule` first: lean weighs them all, and among choices of equal degree and JCT
        (e.g. one server's devices by ``first_fit`` or ``best_fit``) it takes the first rule's. ``lean`` prefers
        ``first_fit`` (the rules' own order); ``lean+best_fit`` fills the fullest server that fits."""
        return (self.rule, *(rule for rule in PLACEMENT_RULES if rule != self.rule))

    def _large(self, job: Job, view: ClusterView, admit: float | AutoAdmission) -> bool:
        """True when ``job`` should wait (or be declined) under the size admission rule."""
        if job.job_id not in self._seen:
            self._seen.add(job.job_id)
            bisect.insort(self._sizes, job.sequential_jct_s)
            if isinstance(admit, AutoAdmission):  # only the online rule reads arrivals: planners' rollouts skip the cost
                self._arrival_history.observe(job)
        quantile = admit.quantile(self._arrival_history) if isinstance(admit, AutoAdmission) else admit
        threshold = self._sizes[min(len(self._sizes) - 1, int(quantile * len(self._sizes)))]
        if job.sequential_jct_s <= threshold:
            return False
        return len(view.waiting) > 1 or view.num_free < self.admit_free * view.cluster.num_devices


@dataclass
class BestLean(Lean):
    """``lean:admit=best``: lean with the fixed admission quantile of ``grid`` that blocks fewest jobs
    on tuning streams. Not usable until :meth:`choose_admit` has set it (the evaluation runner and
    the training validation tune it per workload on streams apart from the evaluated ones)."""

    grid: tuple[float, ...] = ADMIT_GRID
    tuning_blocking: dict[float, float] | None = field(default=None, repr=False)

    def choose_admit(self, blocking: dict[float, float]) -> float:
        """Fix ``admit`` to the quantile with the least ``blocking`` (quantile -> mean blocking rate); ties go to the larger."""
        self.admit = min(self.grid, key=lambda q: (blocking[q], -q))
        self.tuning_blocking = dict(blocking)
        return self.admit

    def tuned(self, tuning: Tuning) -> BestLean:
        """A copy with ``admit`` fixed to the quantile of :attr:`grid` that blocks fewest jobs on the tuning streams."""
        variants = {
            q: Lean(rule=self.rule, max_degree=self.max_degree, cap=self.cap, admit_free=self.admit_free, admit=q) for q in self.grid
        }
        copy = replace(self)
        copy.reset(self.rng)  # its own run state, not this one's
        copy.choose_admit({q: tuning.blocking(lean) for q, lean in variants.items()})
        return copy

    def stats(self) -> dict | None:
        return None if self.admit is None else {"admit": self.admit, "tuning_blocking": self.tuning_blocking}

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if self.admit is None:
            raise PolicyError("lean:admit=best must be tuned on a workload first (placer evaluate does it)")
        return super().decide(job, view)


@dataclass
class Switch(Lean):
    """``switch:U`` (module docstring): the widest degree that meets the deadline while the cluster is quiet, lean otherwise."""

    quiet_free: float = 0.5  # U: the share of devices that must be free (strictly more) to go wide

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if len(view.waiting) > 1 or view.num_free <= self.quiet_free * view.cluster.num_devices:
            return super().decide(job, view)
        table = OptionTable(job, view, degrees_for(view, self.max_degree), (self.rule,))
        feasible = np.flatnonzero(table.feasible)
        return table[int(feasible[-1])].place() if len(feasible) else Reject()
