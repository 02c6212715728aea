"""The environment's episodes on the compiled engine against the same episodes on the reference simulator: the same
observations, masks, rewards and records for the same actions (the engine changes speed, not what a policy learns)."""

import numpy as np
import pytest

from placer import envs
from placer.envs import env as env_module
from placer.sim.engine.session import EngineSimulator
from placer.sim.simulator import PULL, Simulator

SETTINGS = {
    "loss": {"graphs": ("alexnet", "gnmt", "resnet18"), "episode_jobs": 40},
    "queue": {"graphs": ("alexnet", "gnmt", "resnet18"), "episode_jobs": 40, "queue": "edf-bf", "advisers": ("lean", "para_min")},
    "baseline": {"graphs": ("alexnet", "vgg16"), "episode_jobs": 30, "queue": "fifo:4", "baseline": "lean:admit=0.9"},
}


def _episodes(env, seeds):
    """Every observation, mask, reward and settled record of an episode per seed, actions drawn from the mask."""
    out = []
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        rng, done, trace = np.random.default_rng(seed), False, [(obs, info)]
        while not done:
            mask = env.action_masks()
            obs, r, done, _, step = env.step(int(rng.choice(np.flatnonzero(mask))))
            trace.append((mask, obs, r, step["record"], tuple(step["settled"])))
        out.append((trace, tuple(env.sim.records), env.sim.now))
    return out


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_episodes_on_the_engine_match_the_reference(monkeypatch, setting):
    kwargs, seeds = SETTINGS[setting], range(4)
    engine_env = envs.ClusterPlacementEnv(**kwargs)
    engine = _episodes(engine_env, seeds)
    assert isinstance(engine_env.sim, EngineSimulator)
    monkeypatch.setattr(env_module, "stepped_simulator", lambda cost, stream, queue, elastic: Simulator(
        cost, stream, queue=queue, rebalance=PULL if elastic else None))  # fmt: skip
    reference_env = envs.ClusterPlacementEnv(**kwargs)
    reference = _episodes(reference_env, seeds)
    assert isinstance(reference_env.sim, Simulator)
    assert _same(engine, reference)
