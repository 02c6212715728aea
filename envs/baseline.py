"""An input-dependent baseline for the reward: a heuristic's outcome on the episode's own arrivals.

The arrivals are exogenous: a burst blocks jobs whatever the policy does, and that noise dominates
the return an actor-critic learns from (the critic cannot see the arrivals to come). With
``EnvConfig(baseline="lean:admit=0.9")`` the environment also runs that heuristic on each episode's
stream at reset, which gives every job ``k`` its reward ``c_k`` under the heuristic
(:func:`placer.envs.reward.reward` of its record), and shapes the reward with the potential

    Phi(s) = sum of c_k over the jobs arrived and not yet settled (waiting in the queue)
           + sum over the arrivals to come, j = 1, 2, ..., of d^j c_(a + j - 1)

(``a`` the next arrival's index, ``d`` = ``EnvConfig.baseline_arrival_discount``): a step from ``s`` to ``s'``
earns ``r + g Phi(s') - Phi(s)`` (``Phi`` = 0 at the end), ``g`` = ``EnvConfig.baseline_discount``, PPO's
discount per step. The discounted return from any state is then the plain one less ``Phi`` of that state:
a baseline that depends on the arrivals and the state, never on the actions taken from there (Ng et al.
1999's potential-based shaping; Mao et al. 2019, "Variance reduction for reinforcement learning in
input-driven environments"), so it moves no policy gradient and no optimal policy, only the variance.
When the policy settles job ``k`` (starts or blocks it) it earns its own reward for ``k`` and the potential
drops by ``c_k``: the step pays what the policy did with ``k`` against what the heuristic did.

Subtracting each arrival's ``c_k`` at the step it arrives, without a potential, is biased under
discounting: a step added by holding a job pushes every later subtraction one discount further away, so
it pays to hold (a PPO run from the ``regimes`` clone so shaped fell from its teacher's return to 70 below
it in 210,000 steps). Evaluations and validation count blocks, never this reward.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence

import numpy as np

from placer.baselines.policy import Policy, named_by_spec, run_policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.cluster.topology import Cluster
from placer.common.errors import EnvConfigError
from placer.cost import CostModel
from placer.envs.regime import Regime
from placer.envs.reward import reward
from placer.sim.queueing import QueueConfig
from placer.workloads.generator import JobSpec


def baseline_policy(spec: str, cluster: Cluster, max_degree: int, role: str = "baseline") -> Policy:
    """The heuristic ``spec`` on ``cluster``; one that must be tuned first (``best``, ``lean:admit=best``) is an error
    naming its ``role`` (a baseline, an adviser)."""
    policy = make_policy(spec, PolicyContext(cluster, max_degree))
    if not named_by_spec(policy):
        raise EnvConfigError(f"{role} {spec!r}: give a heuristic whose name alone decides what it does (e.g. lean:admit=0.9)")
    return policy


def baseline_for(baseline: str | Mapping[str, str] | None, regime: Regime) -> str:
    """The heuristic of ``baseline`` (one name, or :attr:`Regime.key` -> name) for the episode of regime ``regime``."""
    if isinstance(baseline, str):
        return baseline
    if baseline is None:
        raise EnvConfigError("no baseline is configured")
    try:
        return baseline[regime.key]
    except KeyError:
        raise EnvConfigError(f"the baseline table names no heuristic for the regime {regime.key!r}") from None


class StreamBaseline:
    """A heuristic's ``rewards`` on a stream (``rewards[k]``: job ``k``'s; job ids are arrival indices) arriving at
    ``arrivals`` (seconds, sorted), and the potential (module docstring) with arrivals discounted by ``discount`` each.

    ``potential(now, settled)``: ``Phi`` once the arrivals at or before ``now`` have happened and the jobs settled so
    far carry ``settled`` of the heuristic's reward; ``total``: its undiscounted return.
    """

    def __init__(self, rewards: Sequence[float], arrivals: Sequence[float], discount: float) -> None:
        self.rewards, self._arrivals = list(rewards), list(arrivals)
        self._arrived = np.concatenate([[0.0], np.cumsum(self.rewards)]).tolist()  # [a]: c_0 + ... + c_(a-1)
        self._to_come = [0.0] * (len(self.rewards) + 1)  # [a]: d c_a + d^2 c_(a+1) + ...
        for k in range(len(self.rewards) - 1, -1, -1):
            self._to_come[k] = discount * (self.rewards[k] + self._to_come[k + 1])
        self.total = self._arrived[-1]

    @classmethod
    def of_run(
        cls, policy: Policy, cost: CostModel, stream: Sequence[JobSpec], queue: QueueConfig, kind: str, mean_seq_s: float, discount: float
    ) -> StreamBaseline:
        """``policy`` run on ``stream``, its records rewarded as :func:`placer.envs.reward.reward` ``kind`` rewards them."""
        run = run_policy(policy, cost, stream, queue, np.random.default_rng(0))
        by_id = {record.job_id: reward(kind, record, mean_seq_s) for record in run.records}
        return cls([by_id.get(i, 0.0) for i in range(len(stream))], [spec.arrival_s for spec in stream], discount)

    def potential(self, now: float, settled: float) -> float:
        arrived = bisect.bisect_right(self._arrivals, now)
        return self._arrived[arrived] - settled + self._to_come[arrived]
