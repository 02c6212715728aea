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
    "sjf": {
        "graphs": ("alexnet", "gnmt", "vgg16"), "episode_jobs": 60, "queue": "sjf-bf:8",
        "advisers": ("switch:0.5", "eff:0.5", "lean:admit=0.8"),
    },  # fmt: skip
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
        history = env.history
        out.append((trace, tuple(env.sim.records), env.sim.now, tuple(history._sizes), sorted(history._seen)))
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
    assert isinstance(engine_env.sim, EngineSimulator) and engine_env.sim.screening
    monkeypatch.setattr(env_module, "stepped_simulator", lambda cost, stream, queue, elastic, screen=None: Simulator(
        cost, stream, queue=queue, rebalance=PULL if elastic else None))  # fmt: skip
    reference_env = envs.ClusterPlacementEnv(**kwargs)
    reference = _episodes(reference_env, seeds)
    assert isinstance(reference_env.sim, Simulator)
    assert _same(engine, reference)


def test_the_engine_screens_offers_only_where_every_adviser_answers_in_it():
    # an adviser deciding in Python must see every offer as it is made, so then the env asks about every offer itself
    from placer.cluster.topology import load_cluster
    from placer.envs.advice import Advisers

    cluster = load_cluster("pacml")
    assert Advisers((), 16).screenable(cluster) and Advisers(("lean", "para_min+best_fit"), 16).screenable(cluster)
    assert not Advisers(("lean", "random"), 16).screenable(cluster)
    assert not Advisers(("lean",), 16, compiled=False).screenable(cluster)
    env = envs.ClusterPlacementEnv(graphs=("alexnet", "gnmt", "resnet18"), episode_jobs=20, advisers=("lean", "random"))
    env.reset(seed=0)
    assert isinstance(env.sim, EngineSimulator) and not env.sim.screening
