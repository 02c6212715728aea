"""An input-dependent baseline for the reward: a heuristic's outcome on the episode's own arrivals.

The arrivals are exogenous: a burst blocks jobs whatever the policy does, and that noise dominates
the return an actor-critic learns from (the critic cannot see the arrivals to come). With
``EnvConfig(baseline="lean:admit=0.9")`` the environment also runs that heuristic on each episode's
stream at reset, and every arrival's reward under it (:func:`envs.reward.reward` of its record) is
subtracted from the step at which the arrival has happened (at the end, all that remain). The return
then counts what the policy does better or worse than the heuristic on the same arrivals
(Mao et al., "Variance reduction for reinforcement learning in input-driven environments", ICLR 2019).

What is subtracted from a step on depends only on the stream and on how far the simulation has got
(which arrivals have happened), never on the actions taken from then on, so it is a baseline: it
moves no policy-gradient in expectation, undiscounted; with discounting it is exact up to when each
arrival's subtraction falls. Evaluations and validation count blocks, never this reward.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence

import numpy as np

from envs.reward import reward
from placer.baselines.policy import Policy, named_by_spec, run_policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.common.errors import PlacerError
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.workloads.generator import JobSpec


def baseline_policy(spec: str, cost: CostModel, max_degree: int) -> Policy:
    """The heuristic ``spec`` on ``cost``'s cluster; one that must be tuned first (``best``, ``lean:admit=best``) is an error."""
    policy = make_policy(spec, PolicyContext(cost.cluster, max_degree))
    if not named_by_spec(policy):
        raise PlacerError(f"baseline {spec!r}: give a heuristic whose name alone decides what it does (e.g. lean:admit=0.9)")
    return policy


def baseline_for(baseline: str | Mapping[str, str] | None, regime: str) -> str:
    """The heuristic of ``baseline`` (one name, or regime key -> name) for the episode of regime ``regime``."""
    if isinstance(baseline, str):
        return baseline
    if baseline is None:
        raise PlacerError("no baseline is configured")
    try:
        return baseline[regime]
    except KeyError:
        raise PlacerError(f"the baseline table names no heuristic for the regime {regime!r}") from None


class StreamBaseline:
    """The rewards ``policy`` earns on ``stream``, to subtract as the arrivals happen.

    ``due(now)`` is the sum over the arrivals at or before ``now`` (seconds) not yet returned;
    ``rest()`` the sum over all not yet returned.
    """

    def __init__(
        self, policy: Policy, cost: CostModel, stream: Sequence[JobSpec], queue: QueueConfig, kind: str, mean_seq_s: float
    ) -> None:
        run = run_policy(policy, cost, stream, queue, np.random.default_rng(0))
        by_id = {record.job_id: reward(kind, record, mean_seq_s) for record in run.records}
        self._arrivals = [spec.arrival_s for spec in stream]  # job ids are arrival indices (placer.sim.simulator)
        self._cumulative = np.concatenate([[0.0], np.cumsum([by_id.get(i, 0.0) for i in range(len(stream))])]).tolist()
        self._returned = 0  # arrivals already subtracted

    @property
    def total(self) -> float:
        """The heuristic's return on the stream."""
        return self._cumulative[-1]

    def due(self, now: float) -> float:
        return self._take(bisect.bisect_right(self._arrivals, now))

    def rest(self) -> float:
        return self._take(len(self._arrivals))

    def _take(self, upto: int) -> float:
        upto = max(upto, self._returned)
        amount = self._cumulative[upto] - self._cumulative[self._returned]
        self._returned = upto
        return amount
