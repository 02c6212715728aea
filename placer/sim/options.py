"""The (degree, placement rule) choices open to a job, with their predicted outcome.

Heuristics, the RL environment's action mask and the query API all read this one table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from placer.cluster.placement import DEFAULT_RULE
from placer.cost import Prediction, Strategy
from placer.sim.simulator import ClusterView
from placer.sim.types import Job, Place, meets_deadline

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
    cost, graph, iterations, out = view.cost, job.graph, job.iterations, []
    deadline = job.remaining_s(view.now)
    predicted: dict[int, Prediction] = {}  # by the shape's id: the cost model interns equal shapes
    for degree, rule, devices, shape, repeat in cost.placements(view.free, degrees, rules):
        if repeat and distinct:
            continue
        if devices is None or shape is None:  # both None together: too few devices free
            out.append(Option(degree, rule, None, None, deadline, None))
            continue
        prediction = predicted.get(id(shape))
        if prediction is None:
            prediction = predicted[id(shape)] = cost.predict(graph, shape)
        jct = prediction.iteration_s * iterations if prediction.fits else None
        out.append(Option(degree, rule, devices, jct, deadline, prediction.strategy, shape.servers))
    return out


def any_feasible(job: Job, view: ClusterView, *, degrees: Sequence[int], rules: Sequence[str]) -> bool:
    """``any(o.feasible for o in options(job, view, degrees=degrees, rules=rules))``, from one memoised lookup
    (:meth:`~placer.cost.CostModel.best_iteration_s`) instead of the table: a queue re-offers its waiting jobs at every
    decision point, and most have nothing feasible."""
    best = view.cost.best_iteration_s(job.graph, view.free, degrees, rules)
    return best < math.inf and meets_deadline(best * job.iterations, job.remaining_s(view.now))
