"""The input-dependent baseline: a heuristic's reward on the episode's own arrivals, subtracted as they happen."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from envs.baseline import StreamBaseline, baseline_for, baseline_policy
from envs.config import EnvConfig
from envs.reward import reward
from placer.baselines.policy import run_policy
from placer.common.errors import PlacerError

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


def test_the_return_is_the_policys_less_the_heuristics_on_the_same_arrivals():
    plain, based = envs.ClusterPlacementEnv(**QUEUED), envs.ClusterPlacementEnv(**QUEUED, baseline="lean")
    raw, times = _episode(plain, 3)
    shaped, _ = _episode(based, 3)
    assert len(raw) == len(shaped)  # the baseline changes rewards, never the episode
    heuristic = baseline_policy("lean", plain.cost, 16)
    run = run_policy(heuristic, plain.cost, plain.stream, plain.sim.queue, np.random.default_rng(0))
    per_job = {r.job_id: reward("mission", r, plain._mean_seq) for r in run.records}
    arrivals = [spec.arrival_s for spec in plain.stream]
    due = [sum(per_job[j] for j, t in enumerate(arrivals) if t <= now) for now in times[:-1]] + [sum(per_job.values())]
    subtracted = np.diff([0.0, *due])  # each step takes what arrived since the last one; the last step takes the rest
    assert np.allclose(np.array(raw) - np.array(shaped), subtracted)
    assert sum(shaped) == pytest.approx(sum(raw) - sum(per_job.values()))
    assert any(per_job.values())  # the heuristic earned something: the test subtracts more than zeros


def test_a_stream_baseline_hands_out_each_arrival_once():
    """Three arrivals at 1, 2 and 2 s earning 1, -1 and 0.5 (hand-built, no simulation)."""
    baseline = StreamBaseline.__new__(StreamBaseline)
    baseline._arrivals, baseline._cumulative, baseline._returned = [1.0, 2.0, 2.0], [0.0, 1.0, 0.0, 0.5], 0
    assert baseline.due(0.5) == 0.0
    assert baseline.due(1.0) == 1.0
    assert baseline.due(1.5) == 0.0  # nothing new arrived
    assert baseline.due(2.0) == -0.5
    assert baseline.rest() == 0.0  # all handed out already
    assert baseline.total == 0.5


def test_a_table_names_a_heuristic_per_regime_and_a_gap_is_one_line():
    assert baseline_for("lean", "any") == "lean"
    assert baseline_for({"a|b": "fixed:8"}, "a|b") == "fixed:8"
    with pytest.raises(PlacerError, match="no heuristic for the regime 'c'"):
        baseline_for({"a|b": "fixed:8"}, "c")
    env = envs.ClusterPlacementEnv(**QUEUED, baseline={"nowhere": "lean"})
    with pytest.raises(PlacerError, match="no heuristic for the regime 'dgx8x8"):
        env.reset(seed=0)


def test_bad_baselines_are_refused_with_one_line():
    with pytest.raises(PlacerError, match="nonsense"):
        EnvConfig(baseline="nonsense:3")
    with pytest.raises(PlacerError, match="whose name alone decides"):
        envs.ClusterPlacementEnv(**QUEUED, baseline="best").reset(seed=0)
