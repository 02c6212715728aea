"""Advisers: named heuristics run beside the policy, their decisions part of what it observes.

With ``EnvConfig(advisers=("lean+best_fit", "para_min+best_fit", ...))`` every offer is also put to each adviser,
and the observation says what each would do: ``options`` gains one column per adviser (1 where the adviser places the
job on exactly that option's devices) and ``advice`` (A,) is 1 for each adviser that holds (or rejects) the job.
`best`'s members are such heuristics, one per regime; a student shown their decisions learns *which* to follow in the
state it reads (and where to depart from all of them) rather than re-deriving each one's boundary and placement rule
from the raw features (``docs/learning.md``: the clone's disagreements with `best` were mostly a placement rule and
an admission boundary it smoothed across loads).

At a running job's resize offer (``EnvConfig(elastic=True)``, :mod:`placer.envs.resize`) an elastic adviser marks the option
its ``rebalance`` would move the job to, and one that keeps the job (every fixed-degree adviser) reads as holding it.

An adviser keeps its own run state (the job sizes it has seen, its meters), so it is put every offer of the run, those
with no feasible option included, in the environment and in :class:`placer.policies.loading.LearnedPolicy` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from placer.baselines.policy import Policy
from placer.cluster.topology import Cluster
from placer.envs import action as act
from placer.envs.baseline import baseline_policy
from placer.envs.resize import ResizeOffer, rebalance_choice
from placer.sim.engine.program import Program
from placer.sim.options import Option, OptionTable
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place

ADVISER_SEED = 0


class Advisers:
    """The heuristics ``names`` on each cluster they meet (built there on first use), started afresh in each run."""

    def __init__(self, names: Sequence[str], max_degree: int, *, compiled: bool = True) -> None:
        self.names, self.max_degree, self.compiled = tuple(names), max_degree, compiled  # compiled=False: always in Python
        self._by_cluster: dict[str, tuple[Policy, ...]] = {}
        self._active: tuple[Policy, ...] | None = None  # this run's, once its first offer named the cluster
        self._programs: tuple[Program | None, ...] = ()  # the active advisers' programs (None: decides in Python)
        self._compiled: bool | None = None  # whether this run's advisers with programs answer in the engine

    def __len__(self) -> int:
        return len(self.names)

    def reset(self) -> None:
        """Start a run: the advisers forget the last one, and start on the cluster of the run's first offer."""
        self._active, self._compiled = None, None

    def advise(self, job: Job, view: ClusterView) -> tuple[Decision, ...]:
        """Each adviser's decision on this offer (in :attr:`names` order); put every offer of the run to :meth:`advise` or
        :meth:`observe`. On a view of the compiled engine's, every adviser that has a program answers there (the same
        decisions, kept by the stream), the others in Python; a run answers on one or the other throughout."""
        programs = self._begin(view)
        if not self._compiled:
            return tuple(adviser.decide(job, view) for adviser in self._active or ())
        answers = view.engine.advise(job, view, programs) if view.engine is not None else None
        if answers is None:
            raise RuntimeError("the advisers' run started in the engine and was offered a view of another simulator")
        compiled = iter(answers)
        active = self._active or ()
        return tuple(next(compiled) if p is not None else a.decide(job, view) for a, p in zip(active, self._programs, strict=True))

    def observe(self, job: Job, view: ClusterView) -> None:
        """Put this offer to the advisers where nobody reads their answers (nothing is feasible): each records it as
        :meth:`advise` would (lean's admission, the job's size), a compiled adviser without answering."""
        programs = self._begin(view)
        if not self._compiled:
            self.advise(job, view)
            return
        if view.engine is None or not view.engine.observe(job, view, programs):
            raise RuntimeError("the advisers' run started in the engine and was offered a view of another simulator")
        for adviser, program in zip(self._active or (), self._programs, strict=True):
            if program is None:
                adviser.decide(job, view)

    def screenable(self, cluster: Cluster) -> bool:
        """Whether an engine that screens offers (:meth:`observe_screened`) can stand in for :meth:`observe` on
        ``cluster``: no adviser, or every one with a program answering in the engine."""
        return not self.names or (self.compiled and all(a.program() is not None for a in self._on(cluster)))

    def observe_screened(self, log: np.ndarray, view: ClusterView) -> None:
        """Put the offers an engine screened out since the last offer (``log``: the rows of
        :meth:`~placer.sim.engine.session.EngineSimulator.screened`) to the advisers as :meth:`observe` would have at
        each; ``view`` is the engine's current one. Only where :meth:`screenable`."""
        if not self.names or not len(log):
            return
        programs = self._begin(view)
        if not self._compiled or len(programs) != len(self.names) or not view.engine.observe_logged(view, programs, log):
            raise RuntimeError("screened offers reach only advisers that all answer in the engine, on its current view")

    def _begin(self, view: ClusterView) -> list[Program]:
        """The run's advisers on ``view``'s cluster at its first offer; the programs of those that have one."""
        if self._active is None:
            self._active = self._start(view.cluster)
            self._programs = tuple(adviser.program() for adviser in self._active)
        programs = [p for p in self._programs if p is not None]
        if self._compiled is None:
            self._compiled = self.compiled and bool(programs) and view.engine is not None
        return programs

    def advise_resize(self, offer: ResizeOffer) -> tuple[Decision, ...]:
        """Each adviser's answer to a running job's resize offer (:func:`placer.envs.resize.rebalance_choice`): ``Place`` on the
        devices its ``rebalance`` moves the job to (those of the nearest option where the table lacks them exactly:
        :func:`placer.envs.action.action_of`, as an elastic teacher's label), ``Reject`` where it keeps the job (every
        fixed-degree adviser)."""
        if self._active is None:
            self._active = self._start(offer.view.cluster)
        near = (act.action_of(rebalance_choice(adviser, offer), offer.options) for adviser in self._active)
        return tuple(act.decision(action, offer.options) for action in near)

    def _start(self, cluster: Cluster) -> tuple[Policy, ...]:
        """``cluster``'s advisers, reset with a generator of their own, seeded alike in the env and at inference, so that
        no draw of the env's changes with them."""
        advisers = self._on(cluster)
        for adviser in advisers:
            adviser.reset(np.random.default_rng(ADVISER_SEED))
        return advisers

    def _on(self, cluster: Cluster) -> tuple[Policy, ...]:
        """``cluster``'s advisers (built on first use)."""
        if cluster.name not in self._by_cluster:
            self._by_cluster[cluster.name] = tuple(baseline_policy(name, cluster, self.max_degree, "adviser") for name in self.names)
        return self._by_cluster[cluster.name]


def advice_arrays(advice: Sequence[Decision], table: Sequence[Option]) -> tuple[np.ndarray, np.ndarray]:
    """(columns (O, A), holds (A,)) float32: ``columns[o, a]`` is 1 where adviser ``a`` places the job on option ``o``'s
    devices (every rule giving those devices is marked); ``holds[a]`` is 1 where it holds or rejects it (or returns
    ``Place(())``, which the simulator blocks for lack of capacity: no heuristic does)."""
    columns = np.zeros((len(table), len(advice)), dtype=np.float32)
    holds = np.zeros(len(advice), dtype=np.float32)
    by_degree: dict[int, dict[frozenset[int], list[int]]] = {}  # the options' device sets at each degree advised
    for a, decision in enumerate(advice):
        if isinstance(decision, Place) and decision.devices:
            wanted = frozenset(decision.devices)
            placements = by_degree.get(len(wanted))
            if placements is None:
                placements = by_degree[len(wanted)] = _placements_at(len(wanted), table)
            columns[placements.get(wanted, []), a] = 1.0
        else:
            holds[a] = 1.0
    return columns, holds


def _placements_at(degree: int, table: Sequence[Option]) -> dict[frozenset[int], list[int]]:
    """The options of ``table`` on ``degree`` distinct devices, by their devices; of an :class:`OptionTable`, only its
    options of that degree are looked at, and none is built."""
    out: dict[frozenset[int], list[int]] = {}
    devices_of: Callable[[int], tuple[int, ...] | None]
    if isinstance(table, OptionTable):
        devices_of, indices = table.devices_of, table.at_degree(degree)
    else:
        devices_of, indices = (lambda o: table[o].devices), range(len(table))
    for o in indices:
        devices = devices_of(o)
        if devices is not None and len(placed := frozenset(devices)) == degree:
            out.setdefault(placed, []).append(o)
    return out
