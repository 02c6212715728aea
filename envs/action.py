"""Action encoding: one flat ``Discrete`` over reject and every (degree, placement rule).

Action 0 rejects the job; action ``1 + (degree - 1) * R + r`` places it at ``degree`` with the
``r``-th placement rule (``R`` rules). The mask unmasks reject and exactly the options that
would be accepted (devices free, memory fits, deadline met), so every unmasked action is
feasible, and every feasible one is unmasked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placer.sim.options import Option, OptionTable, any_feasible
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject

REJECT = 0


@dataclass(frozen=True)
class Offer:
    """One choice a policy faces: the offered ``job``, the cluster as it is (``view``, a snapshot) and
    the ``options`` table (:func:`option_table`: degree-major over degrees 1..max_degree x the rules)."""

    job: Job
    view: ClusterView
    options: Sequence[Option]


def num_actions(max_degree: int, num_rules: int) -> int:
    return 1 + max_degree * num_rules


def option_table(job: Job, view: ClusterView, max_degree: int, rules: tuple[str, ...]) -> OptionTable:
    """Options for degrees 1..max_degree x ``rules``; degrees beyond the cluster have no devices (each option built when
    first read: the mask and the observation read the table's arrays)."""
    usable = min(max_degree, view.cluster.num_devices)
    return OptionTable(job, view, range(1, usable + 1), rules, max_degree)


def any_option(job: Job, view: ClusterView, max_degree: int, rules: tuple[str, ...]) -> bool:
    """True when some option of :func:`option_table` is feasible (one memoised lookup: no table is built)."""
    return any_feasible(job, view, degrees=range(1, min(max_degree, view.cluster.num_devices) + 1), rules=rules)


def action_mask(table: Sequence[Option], max_degree: int, num_rules: int) -> np.ndarray:
    """(num_actions,) bool; ``table`` is degree-major over degrees 1.. and the rules."""
    mask = np.zeros(num_actions(max_degree, num_rules), dtype=bool)
    mask[REJECT] = True
    if isinstance(table, OptionTable):
        mask[1 : 1 + len(table)] = table.feasible
        return mask
    for i, option in enumerate(table):
        mask[1 + i] = option.feasible
    return mask


def decision(action: int, table: Sequence[Option]) -> Decision:
    if action == REJECT:
        return Reject()
    option = table[action - 1] if action - 1 < len(table) else None
    if option is None or option.devices is None:
        return Place(())  # infeasible: the simulator blocks it for lack of capacity
    return Place(option.devices)


def action_of(decision: Decision, table: Sequence[Option]) -> int:
    """The action of a heuristic's ``decision`` in the option ``table``: the first feasible option giving exactly its
    devices; else (a teacher placing by a rule of its own: ElasticFlow's buddy blocks, Chronus, an elastic teacher's
    step-wise grows) the feasible option of the same degree sharing most of them, then the soonest to finish; reject when
    it rejects or no option has that degree."""
    if not isinstance(decision, Place) or not decision.devices:
        return REJECT
    wanted, near = set(decision.devices), []
    for i, option in enumerate(table):
        if not option.feasible or option.devices is None:
            continue
        if option.devices == decision.devices:
            return 1 + i
        if len(option.devices) == len(decision.devices) and option.jct_s is not None:
            near.append((len(wanted.intersection(option.devices)), -option.jct_s, -i))
    return 1 - max(near)[2] if near else REJECT
