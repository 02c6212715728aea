"""Tuning ``lean:admit=best`` on streams apart from the evaluated ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from placer.baselines.heuristics import BestLean, Lean
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.workloads.generator import JobSpec

TUNING_SEED = 1_000_000  # tuning stream k of beta distribution i: np.random.default_rng([TUNING_SEED + k, i])
TUNING_STREAMS = 4


def tuning_streams(draw: Callable[[np.random.Generator], Sequence[JobSpec]], beta_index: int, streams: int = TUNING_STREAMS) -> list:
    """The tuning streams of one beta distribution (seeds no evaluation or validation uses)."""
    return [list(draw(np.random.default_rng([TUNING_SEED + k, beta_index]))) for k in range(streams)]


def tuning_blocking(policy: BestLean, cost: CostModel, streams: Sequence[Sequence[JobSpec]], queue: QueueConfig) -> dict[float, float]:
    """Mean blocking rate over ``streams`` of lean at each quantile of ``policy``'s grid (for :meth:`BestLean.choose_admit`)."""
    blocking = {}
    for quantile in policy.grid:
        rates = []
        for k, jobs in enumerate(streams):
            lean = Lean(rule=policy.rule, max_degree=policy.max_degree, cap=policy.cap, admit=quantile, admit_free=policy.admit_free)
            lean.reset(np.random.default_rng([TUNING_SEED + k, 1]))
            rates.append(simulate(cost, jobs, lean.decide, queue=queue).metrics.blocking_rate)
        blocking[quantile] = float(np.mean(rates))
    return blocking
