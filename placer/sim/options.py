"""The (degree, placement rule) choices open to a job, with their predicted outcome.

Heuristics, the RL environment's action mask and the query API all read this one table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import NamedTuple

import numpy as np

from placer.cluster.placement import DEFAULT_RULE
from placer.cost import CostModel, Prediction, Strategy
from placer.cost.tables import PlacementTable
from placer.graphs.job_graph import JobGraph
from placer.sim.state import ClusterView
from placer.sim.types import DEADLINE_TOLERANCE, Job, Place, meets_deadline

DEFAULT_MAX_DEGREE = 16


class Option(NamedTuple):
    """Placing a job at ``degree`` with placement rule ``rule``.

    ``devices`` is None when fewer than ``degree`` devices are free; ``jct_s`` is None when
    the job does not fit in memory there. ``strategy`` is how the cost model splits the job
    on those devices (the fastest that fits; None without devices or strategy).
    """

    degree: int
    rule: str
    devices: tuple[int, ...] | None
    jct_s: float | None
    deadline_s: float
    strategy: Strategy | None = None
    servers: int = 0  # servers the devices span

    @property
    def fits(self) -> bool:
        return self.jct_s is not None

    @property
    def feasible(self) -> bool:
        """The job would be accepted: devices free, memory fits, deadline met."""
        return self.jct_s is not None and meets_deadline(self.jct_s, self.deadline_s)

    @property
    def device_seconds(self) -> float:
        return self.degree * self.jct_s if self.jct_s is not None else float("inf")

    def place(self) -> Place:
        """The decision that takes this option (one with devices: a feasible option has them)."""
        if self.devices is None:
            raise ValueError(f"option (degree {self.degree}, {self.rule}) has no devices to place on")
        return Place(self.devices)


def degrees_for(view: ClusterView, max_degree: int = DEFAULT_MAX_DEGREE) -> range:
    return range(1, min(max_degree, view.cluster.num_devices) + 1)


def options(
    job: Job,
    view: ClusterView,
    *,
    degrees: Sequence[int],
    rules: Sequence[str] = (DEFAULT_RULE,),
    distinct: bool = False,
) -> list[Option]:
    """One :class:`Option` per (degree, rule), degree-major, in the order given.

    An option's ``deadline_s`` is the time the job has left at ``view.now`` (its deadline less the time it waited).
    ``distinct``: leave out a rule's option when an earlier rule gave the same devices at that degree.
    """
    table = OptionTable(job, view, degrees, rules)
    if not distinct:
        return list(table)
    repeats = table.table.repeats
    return [option for option, repeat in zip(table, repeats, strict=True) if not repeat]


class OptionTable(Sequence[Option]):
    """:func:`options` of ``job`` on ``view`` at ``degrees`` x ``rules``, and beyond the degrees, up to ``max_degree``, an
    option without devices per (degree, rule) (deadline: the job's whole deadline), each built when first read.

    The placements come from the cost model's table of the view's free devices per server
    (:meth:`~placer.cost.CostModel.placement_table`), so which options meet the deadline (:attr:`feasible`) and what the
    observation needs are arrays over it, without building an option; ``table``, ``predicted`` (the job's graph's
    predictions on ``table.shapes``), ``deadline_s`` (what the job has left) and ``padding`` are there for them.
    """

    def __init__(self, job: Job, view: ClusterView, degrees: Sequence[int], rules: Sequence[str], max_degree: int = 0) -> None:
        self.job, self.view = job, view
        cost = view.cost
        self.table = cost.placement_table(view.free, degrees, rules)
        self.predicted = cost.table_predictions(job.graph, self.table)
        self.deadline_s = job.remaining_s(view.now)
        self._pad_from = (self.table.degrees[-1] if self.table.degrees else 0) + 1  # the first degree beyond
        self.padding = max(max_degree - self._pad_from + 1, 0) * len(rules)
        self._built: list[Option | None] = [None] * (len(self.table) + self.padding)
        self._ids: list[int] | None = None

    def __len__(self) -> int:
        return len(self._built)

    def __getitem__(self, index):  # type: ignore[override]  # an int gives an option, a slice a list of them
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        option = self._built[index]
        if option is None:
            option = self._built[index] = self._option(range(len(self))[index])
        return option

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @cached_property
    def jct_s(self) -> np.ndarray:
        """(len(table),) float64, read-only: each placement's :attr:`Option.jct_s` (s), inf where it has no devices or the
        job does not fit there; the same floats an option holds, without building it (computed once per table)."""
        out = fitting_iteration_s(self.view.cost, self.job.graph, self.table, self.predicted) * self.job.iterations
        out.flags.writeable = False
        return out

    @cached_property
    def feasible(self) -> np.ndarray:
        """(len,) bool, read-only: each option's :attr:`Option.feasible`, without building them (computed once per table)."""
        out = np.zeros(len(self), dtype=bool)
        out[: len(self.table)] = self._meets(self.jct_s)
        out.flags.writeable = False
        return out

    def at_degree(self, degree: int) -> range:
        """The indices of the options at ``degree`` that can have devices (one per rule; none beyond the table)."""
        degrees, per_degree = self.table.degrees, len(self.table.rules)
        if degree not in degrees:
            return range(0)
        first = degrees.index(degree) * per_degree
        return range(first, first + per_degree)

    def devices_of(self, index: int) -> tuple[int, ...] | None:
        """``self[index].devices``, without building the option."""
        table = self.table
        if index >= len(table) or table.slots[index] < 0:
            return None
        if self._ids is None:
            self._ids = np.flatnonzero(self.view.free).tolist()
        return table.devices(index, self._ids)

    def _meets(self, jct: np.ndarray) -> np.ndarray:
        return np.isfinite(jct) & (jct <= self.deadline_s * (1 + DEADLINE_TOLERANCE))  # meets_deadline, elementwise

    def thriftiest(self, tie: float) -> int | None:
        """The index of ``lean``'s choice, without building an option: among the feasible options whose devices no
        earlier rule gave at their degree, those within a factor ``1 + tie`` of the least device-seconds (degree x JCT),
        the first with the fewest devices, then the shortest JCT, then the fewest device-seconds (None: none feasible)."""
        jct = self.jct_s
        feasible = self._meets(jct) & ~np.asarray(self.table.repeats, dtype=bool)
        if not feasible.any():
            return None
        degree = np.repeat(np.asarray(self.table.degrees, dtype=np.int64), len(self.table.rules))
        seconds = degree * jct
        index = np.flatnonzero(feasible & (seconds <= seconds[feasible].min() * (1 + tie)))
        return int(index[np.lexsort((index, seconds[index], jct[index], degree[index]))[0]])

    def _option(self, i: int) -> Option:
        table, rules = self.table, self.table.rules
        if i >= len(table):  # beyond the cluster: no devices
            j = i - len(table)
            return Option(self._pad_from + j // len(rules), rules[j % len(rules)], None, None, self.job.deadline_s)
        degree, rule, slot = table.degrees[i // len(rules)], rules[i % len(rules)], table.slots[i]
        if slot < 0:  # too few devices free
            return Option(degree, rule, None, None, self.deadline_s, None)
        if self._ids is None:
            self._ids = np.flatnonzero(self.view.free).tolist()
        prediction = self.predicted[slot]
        jct = prediction.iteration_s * self.job.iterations if prediction.fits else None
        return Option(degree, rule, table.devices(i, self._ids), jct, self.deadline_s, prediction.strategy, table.shapes[slot].servers)


def fitting_iteration_s(cost: CostModel, graph: JobGraph, table: PlacementTable, predicted: Sequence[Prediction]) -> np.ndarray:
    """(len(table),) float64: each placement's iteration (s) where ``graph`` fits there, inf elsewhere (kept in the table)."""
    key = ("fitting_iteration_s", graph.key)
    out = table.derived.get(key)
    if out is None:
        per_shape = [p.iteration_s if p.fits else math.inf for p in predicted]
        out = np.array([*per_shape, math.inf], dtype=np.float64)[table.slot_array]  # slot -1 (no devices): the inf
        if cost.cache:
            table.derived[key] = out
    return out


def any_feasible(job: Job, view: ClusterView, *, degrees: Sequence[int], rules: Sequence[str]) -> bool:
    """``any(o.feasible for o in options(job, view, degrees=degrees, rules=rules))``, from one memoised lookup
    (:meth:`~placer.cost.CostModel.best_iteration_s`) instead of the table: a queue re-offers its waiting jobs at every
    decision point, and most have nothing feasible."""
    best = view.cost.best_iteration_s(job.graph, view.free, degrees, rules)
    return best < math.inf and meets_deadline(best * job.iterations, job.remaining_s(view.now))
