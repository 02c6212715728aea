"""The environment's trajectories, pinned bit for bit: a speed-up of the env, the simulator or the cost model must
change no observation, mask, reward or outcome (issue 50 item 4). Each digest hashes every step's observation
(dtype, shape and bytes), action mask, reward, termination and the settled jobs' records; the digests were recorded
on the code before the speed-up."""

import hashlib
import struct

import numpy as np
import pytest

from placer import envs
from placer.common.shipped import data_dir
from placer.envs.env import cost_models_for
from placer.policies.config import load_train_config

PACML = load_train_config(data_dir() / "configs" / "pacml.toml").env  # the training config bench_training builds
FEATURED = PACML.with_changes(
    clusters=("pacml", "mixed"),
    graphs=("alexnet", "gnmt", "resnet18", "vgg16"),
    jobs=64,
    reward="mission",
    history=True,
    meter=True,
    advisers=("lean+best_fit", "para_min+best_fit"),
    baseline="lean",
    loads=(0.6, 1.5),
    max_groups=3,
)
SIPML = PACML.with_changes(
    clusters=("dgx8x8",), strategy="sipml", graphs=("alexnet", "resnet18"), jobs=48, reward="work", rules=("best_fit", "spread")
)

GOLDEN = {
    "pacml": "dc25dffabd8a6ee4708d9a42a738802d8b14d0393a58795e54a715ad5c530037",
    "featured": "c7867551fc54058f0a2d8f04adb8e85d9248229ecddc8abb0481f22387e0a052",
    "sipml": "860a977955ec50e3d9fb73ebcc5ad200073af6f9b221d8240e04a3d6966f9bf3",
}
CONFIGS = {"pacml": (PACML, 1500), "featured": (FEATURED, 500), "sipml": (SIPML, 300)}


def trajectory_digest(config, steps: int, seed: int = 0, cost_models=None) -> str:
    """sha256 of ``steps`` steps of an env of ``config`` (on ``cost_models``, else its own) reset with ``seed``, taking
    random valid actions (as bench_training's environment alone does), reset at each episode's end."""
    env = envs.ClusterPlacementEnv(config, cost_models=cost_models)
    digest = hashlib.sha256()
    rng = np.random.default_rng(seed)

    def add_obs(obs):
        for key in sorted(obs):
            value = obs[key]
            digest.update(f"{key}:{value.dtype.str}:{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())

    obs, info = env.reset(seed=seed)
    add_obs(obs)
    digest.update(repr(sorted(info.items())).encode())
    for _ in range(steps):
        mask = env.action_masks()
        digest.update(mask.tobytes())
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        add_obs(obs)
        digest.update(struct.pack("<d??", reward, terminated, truncated))
        digest.update(repr(info["record"]).encode())
        digest.update(repr(info["settled"]).encode())
        if terminated:
            obs, info = env.reset()
            add_obs(obs)
            digest.update(repr(sorted(info.items())).encode())
    return digest.hexdigest()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_the_trajectory_is_the_recorded_one(name):
    config, steps = CONFIGS[name]
    assert trajectory_digest(config, steps) == GOLDEN[name]


def test_warm_caches_give_the_same_trajectory():
    """A second env on the first's cost models (their caches full, as in a long training run) steps alike."""
    config, steps = CONFIGS["pacml"]
    shared = cost_models_for(config)
    trajectory_digest(config, steps, cost_models=shared)
    assert trajectory_digest(config, steps, cost_models=shared) == GOLDEN["pacml"]
