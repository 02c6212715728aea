"""PPO training speed with and without encoding each distinct graph of a minibatch once.

    python benchmarks/bench_training.py [--steps 2048] [--threads 1] [--config data/configs/pacml.toml] [--net-arch 128] [--smoke]

Builds the model of ``--config`` (default ``data/configs/pacml.toml``, ``learned:pacml``'s: 4 envs,
minibatches of 256, PAC-ML's and three more graphs; of a recipe such as ``data/configs/placer.toml``, its first RL
stage, started fresh; ``--net-arch``: another option-scorer width), collects
``--steps`` environment steps with and without the rollout cache of graph encodings (the weights are fixed
during a rollout), times one of the rollouts' environments alone (``--steps`` random valid actions, its caches
as warm as the rollouts'), then times PPO's update on that rollout buffer with the graph deduplication off
and on (the GNN is most of an update, and a minibatch of 256 holds only a few distinct graphs), and prints
the end-to-end timesteps/s (collection + update) both ways. Target (issue 11): >= 2x timesteps/s. Last, the
ceiling that the environment alone sets: were the network free (no forward pass, no update), end to end could go no
faster than the environment steps, so a rate below issue 29's 3,000 there means no change to the network reaches it;
and where a step's time goes (the cached rollout's environment steps and forward passes, timed per call, the rest of
the rollout, the update), against the 0.333 ms a step that 3,000 timesteps/s allows.

Measured on the 2-core machine with another training job beside it (load 1-2.8), alternating with the code before
issue 50 item 4's speed-up (four runs each; ``experiments/configs/default.toml``: two): the environment alone went
from 923-1,278 to 1,538-2,507 steps/s on the default config (1,041-1,253 to 1,862-2,344 on ``default.toml``), end to
end from 420-456 to 458-588 timesteps/s (405-496 to 626-661). A step after: environment 0.46-0.64 ms, forward pass
0.32-0.41, the rest of the rollout 0.12-0.16, update 0.77-1.01 (``default.toml``: 0.30-0.34, 0.28-0.31, 0.11-0.12,
0.82-0.83): with the environment free, the rest allows 630-830 timesteps/s. ``--scale --envs 2`` was slower than one
process, before and after (0.66-0.69x: the two cores are shared by the learner, the environments and the job beside).
docs/cost-model.md ("Environment speed") has the steady state, measured by CPU time.

An untimed rollout of the same length comes first: each environment's cost model memoises its
predictions per graph and placement shape, and a fresh process spends its first thousands of steps
filling them (a training run of 10^5-10^6 steps runs with them full). Without the warm-up the first
timed mode paid for the caches and the second did not.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from placer.common.errors import PlacerError
from placer.common.shipped import data_dir
from placer.envs.env import ClusterPlacementEnv
from placer.policies.config import TrainConfig, load_train_config
from placer.policies.recipe import is_recipe, load_recipe
from placer.policies.train import build_model

ISSUE_29_TARGET = 3000.0  # end-to-end timesteps/s on the 2-core machine


def training_config(path: Path) -> TrainConfig:
    """The config to time: a training config, or a recipe's first RL stage (its PPO run, the recipe's longest), started
    fresh rather than from the clone the recipe's first stage would have written."""
    if not is_recipe(path):
        return load_train_config(path)
    stage = load_recipe(path, Path(tempfile.gettempdir()) / "bench-recipe").rl[0].config
    return stage.model_copy(update={"train": stage.train.model_copy(update={"init_policy": None})})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scale", action="store_true", help="also measure rollouts in processes and the network on --device")
    parser.add_argument("--envs", type=int, default=os.cpu_count() or 1, help="environments (processes) with --scale")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="the network's device with --scale")
    parser.add_argument("--config", type=Path, default=data_dir() / "configs" / "pacml.toml", help="the training config to build")
    parser.add_argument("--net-arch", type=int, default=None, help="the option scorer's width (default: the config's, 128)")
    parser.add_argument("--smoke", action="store_true", help="32 steps: checks it runs, times nothing worth reading")
    args = parser.parse_args()
    if args.threads < 1 or args.steps < 1 or (args.net_arch is not None and not 1 <= args.net_arch <= 65536):
        parser.error("--threads and --steps must be >= 1, --net-arch within 1..65536")
    if args.smoke:
        args.steps = 32
    torch.set_num_threads(args.threads)
    try:
        config = training_config(args.config)
    except PlacerError as exc:
        parser.exit(2, f"error: {exc}\n")
    n_steps = max(args.steps // config.ppo.n_envs, 8)
    config = config.model_copy(update={"ppo": config.ppo.model_copy(update={"n_steps": n_steps})})
    if args.net_arch is not None:  # how much of the update is the option scorer's width
        config = config.model_copy(update={"policy": config.policy.model_copy(update={"net_arch": [args.net_arch]})})
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(config, Path(tmp))
        _, callback = model._setup_learn(n_steps * config.ppo.n_envs, callback=None)
        callback.init_callback(model)
        extractor = model.policy.features_extractor
        extractor.rollout_cache = None
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=n_steps)  # warm-up, untimed
        collect = {}
        spent = {"environment": [0.0], "forward pass": [0.0]}  # of the cached rollout: where its time goes
        for cached in (False, True):
            extractor.rollout_cache = {} if cached else None
            timed = [(env.unwrapped, "step", spent["environment"]) for env in model.env.envs]
            timed.append((model.policy, "forward", spent["forward pass"]))
            with _timing(timed if cached else []):
                start = time.perf_counter()
                model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=n_steps)
                collect[cached] = time.perf_counter() - start
        extractor.rollout_cache = None
        alone = _env_alone(model.env.envs[0].unwrapped, n_steps * config.ppo.n_envs)  # its caches as warm as the rollouts'
        timings = {}
        state = {k: v.clone() for k, v in model.policy.state_dict().items()}
        optimizer = model.policy.optimizer.state_dict()
        for dedupe in (False, True):
            model.policy.load_state_dict(state)
            model.policy.optimizer.load_state_dict(optimizer)
            model.policy.features_extractor.dedupe_graphs = dedupe
            start = time.perf_counter()
            model.train()
            timings[dedupe] = time.perf_counter() - start
    steps = n_steps * config.ppo.n_envs
    print(f"environment alone (random valid actions): {steps / alone:5.0f} steps/s ({alone / steps * 1e3:.3f} ms a step)")
    for cached, label in ((False, "every step's graph encoded"), (True, "graph encodings cached    ")):
        print(f"rollout, {label}: {collect[cached]:6.1f} s ({steps / collect[cached]:4.0f} steps/s)")
    for dedupe, label in ((False, "every sample's graph encoded"), (True, "each distinct graph once  ")):
        print(f"update,  {label}: {timings[dedupe]:6.1f} s")
    before, after = collect[False] + timings[False], collect[True] + timings[True]
    print(
        f"end to end: {steps / before:.0f} -> {steps / after:.0f} timesteps/s, {before / after:.2f}x "
        f"(target >= 2x {'met' if before / after >= 2 else 'MISSED'})"
    )
    print(_ceiling(steps / alone, steps / after))
    env_s, forward_s = spent["environment"][0], spent["forward pass"][0]
    print(
        f"a step, ms (cached rollout + update): environment {env_s / steps * 1e3:.3f}, forward pass {forward_s / steps * 1e3:.3f}, "
        f"the rest of the rollout (SB3's tensors, masks, buffer) {(collect[True] - env_s - forward_s) / steps * 1e3:.3f}, "
        f"update {timings[True] / steps * 1e3:.3f}; {ISSUE_29_TARGET:.0f} timesteps/s is {1e3 / ISSUE_29_TARGET:.3f} in all"
    )
    if args.scale:
        scaled = _scaled_rate(config, args.envs, args.device, n_steps * config.ppo.n_envs)
        baseline = steps / after
        print(f"at scale ({args.envs} env processes, network on {scaled[1]}): {scaled[0]:.0f} timesteps/s, {scaled[0] / baseline:.2f}x")


def _ceiling(env_rate: float, end_to_end: float, target: float = ISSUE_29_TARGET) -> str:
    """The line saying how far the environment alone (steps/s, the bound with a free network) is from ``target``."""
    share = 1 - end_to_end / env_rate
    verdict = "reachable only with a faster network" if env_rate >= target else "out of reach without a faster environment"
    return (
        f"ceiling (the network free): {env_rate:.0f} timesteps/s, {env_rate / target:.2f}x issue 29's {target:.0f}: {verdict}; "
        f"all but the environment is {share:.0%} of a step's time now"
    )


@contextmanager
def _timing(targets: list[tuple[object, str, list[float]]]) -> Iterator[None]:
    """Add the seconds each ``(owner, method, total)``'s method takes to ``total[0]`` while in the block (an instance
    attribute shadows the method, removed afterwards)."""
    for owner, name, total in targets:
        setattr(owner, name, _timed(getattr(owner, name), total))
    try:
        yield
    finally:
        for owner, name, _ in targets:
            delattr(owner, name)


def _timed(method: Callable, total: list[float]) -> Callable:
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - start

    return timed


def _env_alone(env: ClusterPlacementEnv, steps: int) -> float:
    """Seconds for ``steps`` steps of ``env`` (one of the rollouts', mid-episode, its caches warm) taking random valid actions."""
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            env.reset()
    return time.perf_counter() - start


def _scaled_rate(config, envs: int, device: str, steps: int) -> tuple[float, str]:
    """End-to-end timesteps/s (rollout with cached graph encodings + update) with ``envs`` subprocess envs on ``device``,
    after an untimed rollout that fills each process's cost-model caches."""
    ppo = config.ppo.model_copy(update={"n_envs": envs, "vec_env": "subproc" if envs > 1 else "dummy", "n_steps": max(steps // envs, 8)})
    config = config.model_copy(update={"ppo": ppo, "train": config.train.model_copy(update={"device": device})})
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(config, Path(tmp))
        _, callback = model._setup_learn(ppo.n_steps * envs, callback=None)
        callback.init_callback(model)
        model.policy.features_extractor.rollout_cache = {}
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=ppo.n_steps)  # warm-up, untimed
        start = time.perf_counter()
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=ppo.n_steps)
        model.policy.features_extractor.rollout_cache = None
        model.train()
        elapsed = time.perf_counter() - start
        model.env.close()
        return ppo.n_steps * envs / elapsed, str(model.device)


if __name__ == "__main__":
    main()
