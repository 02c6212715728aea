"""The input-dependent baseline: a heuristic's reward on the episode's own arrivals, subtracted as they happen."""

from __future__ import annotations

import re

import numpy as np
import pytest

from placer import envs
from placer.common.errors import PlacerError
from placer.envs.baseline import StreamBaseline, baseline_for
from placer.envs.config import EnvConfig
from placer.envs.env import cost_models_for
from placer.envs.regime import Regime

QUEUED = {"graphs": ("alexnet", "gnmt", "resnet18"), "jobs": 60, "queue": "edf-bf", "reward": "mission", "load": 1.2, "clusters": "dgx8x8"}


def _episode(env: envs.ClusterPlacementEnv, seed: int) -> tuple[list[float], list[float]]:
    """(rewards, sim.now after each step) of one episode whose actions are drawn from the mask by ``seed``."""
    env.reset(seed=seed)
    rng, rewards, times, done = np.random.default_rng(seed), [], [], False
    while not done:
        _, r, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        rewards.append(r)
        times.append(env.sim.now)
    return rewards, times


def test_the_discounted_return_from_any_state_is_the_plain_one_less_the_potential():
    """Same actions with and without the baseline: at every step, G' = G - Phi(s) exactly (potential-based shaping)."""
    gamma = 0.9
    plain = envs.ClusterPlacementEnv(**QUEUED)
    based = envs.ClusterPlacementEnv(**QUEUED, baseline="lean", baseline_discount=gamma, baseline_arrival_discount=0.5)
    raw, _ = _episode(plain, 3)
    based.reset(seed=3)
    potentials = [based._potential]
    shaped, _ = _episode(based, 3)
    based.reset(seed=3)
    rng, done = np.random.default_rng(3), False
    while not done:
        _, _, done, _, _ = based.step(int(rng.choice(np.flatnonzero(based.action_masks()))))
        potentials.append(based._potential)
    assert len(raw) == len(shaped) and potentials[-1] == 0.0  # the baseline changes rewards, never the episode
    to_go = lambda rewards: np.array([sum(gamma**i * r for i, r in enumerate(rewards[t:])) for t in range(len(rewards))])  # noqa: E731
    assert np.allclose(to_go(shaped), to_go(raw) - np.array(potentials[:-1]))
    assert any(based._baseline.rewards)  # the heuristic earned something: more than zeros are subtracted


def test_the_potential_counts_waiting_jobs_whole_and_arrivals_to_come_discounted():
    """Three arrivals at 1, 2 and 2 s earning 1, -1 and 0.5 under the heuristic, discount 0.5 per arrival (hand-built)."""
    baseline = StreamBaseline([1.0, -1.0, 0.5], [1.0, 2.0, 2.0], 0.5)
    assert baseline.total == 0.5
    assert baseline.potential(0.5, 0.0) == pytest.approx(0.3125)  # all to come: 0.5 x 1 + 0.25 x -1 + 0.125 x 0.5
    assert baseline.potential(1.0, 0.0) == pytest.approx(1.0 - 0.375)  # job 0 waits; 1 and 2 to come
    assert baseline.potential(1.0, 1.0) == pytest.approx(-0.375)  # job 0 settled
    assert baseline.potential(2.0, 1.0) == pytest.approx(-0.5)  # jobs 1 and 2 wait


def test_a_table_names_a_heuristic_per_regime_and_a_gap_is_one_line():
    here, elsewhere = Regime("dgx8x8", 0.9, "C", "none", "const", "iid"), Regime("pacml", 0.9, "C", "none", "const", "iid")
    assert baseline_for("lean", here) == "lean"
    assert baseline_for({here.key: "fixed:8"}, here) == "fixed:8"
    with pytest.raises(PlacerError, match=re.escape("no heuristic for the regime 'pacml|0.9|C|none|const|iid'")):
        baseline_for({here.key: "fixed:8"}, elsewhere)
    with pytest.raises(PlacerError, match="no heuristic for the regime 'dgx8x8"):
        envs.ClusterPlacementEnv(**QUEUED, baseline={elsewhere.key: "lean"})
    with pytest.raises(PlacerError, match=re.escape("baseline: regime 'nowhere' is not cluster|load|beta_dist")):
        EnvConfig(baseline={"nowhere": "lean"})  # refused where the table is read, not at the first reset


def test_bad_baselines_are_refused_with_one_line_when_the_env_is_built():
    with pytest.raises(PlacerError, match="nonsense"):
        EnvConfig(baseline="nonsense:3")
    with pytest.raises(PlacerError, match="whose name alone decides"):
        envs.ClusterPlacementEnv(**QUEUED, baseline="best")
    with pytest.raises(PlacerError, match="names no regime"):
        EnvConfig(baseline={})
    with pytest.raises(PlacerError, match="not a heuristic's name"):
        EnvConfig(baseline={"a": 1})


def test_shared_cost_models_must_be_the_configs():
    config = EnvConfig(**QUEUED)
    env = envs.ClusterPlacementEnv(config, cost_models=cost_models_for(config))
    assert env.costs[0].cluster.name == "dgx8x8"
    for wrong in ([], cost_models_for(config.with_changes(clusters="pacml")), cost_models_for(config.with_changes(strategy="sipml"))):
        with pytest.raises(PlacerError, match="cost_models are for clusters"):
            envs.ClusterPlacementEnv(config, cost_models=wrong)
