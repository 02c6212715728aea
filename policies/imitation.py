"""Warm start: behaviour cloning of a heuristic before reinforcement learning.

``collect`` runs the environment with a heuristic teacher choosing, and records each decision
as the action whose option gives the teacher's devices. ``clone`` fits the policy's masked
logits to those actions (cross-entropy). PPO then starts from a policy as good as the teacher
instead of from noise; the graph part of each observation is stored once per graph.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from envs.action import REJECT
from envs.config import EnvConfig
from envs.env import ClusterPlacementEnv
from placer.heuristics import make_heuristic
from placer.types import Place

GRAPH_KEYS = ("nodes", "node_mask", "edge_index", "edges", "edge_mask")


@dataclass
class Demonstrations:
    graph_of: list[str]  # per sample: graph key
    graphs: dict[str, dict[str, np.ndarray]]  # graph key -> padded graph arrays
    dynamic: dict[str, np.ndarray]  # per-sample arrays, stacked
    masks: np.ndarray  # (S, num_actions) bool
    actions: np.ndarray  # (S,) int64

    def __len__(self) -> int:
        return len(self.actions)

    def batch(self, index: np.ndarray) -> dict[str, torch.Tensor]:
        out = {k: torch.from_numpy(v[index]).float() for k, v in self.dynamic.items()}
        for key in GRAPH_KEYS:
            out[key] = torch.from_numpy(np.stack([self.graphs[self.graph_of[i]][key] for i in index])).float()
        return out


def teacher_action(decision, table) -> int:
    """The first feasible option index that gives the teacher's devices (reject if none)."""
    if isinstance(decision, Place):
        for i, option in enumerate(table):
            if option.feasible and option.devices == decision.devices:
                return 1 + i
    return REJECT


def collect(config: EnvConfig, teacher: str, steps: int, seed: int, *, progress: bool = False, workers: int = 1) -> Demonstrations:
    """Record ``steps`` decisions of the heuristic ``teacher`` that had a choice (a progress bar when ``progress``).

    Offers where only reject (or hold) is open are played but not recorded: there is nothing to learn from them.
    ``workers`` > 1 records in that many processes, worker ``w`` seeded ``1009 seed + w + 1`` (a slow
    teacher such as ``lookahead`` then takes 1 / workers of the time).
    """
    if workers > 1:
        return _collect_in_processes(config, teacher, steps, seed, workers)
    env = ClusterPlacementEnv(config)
    policy = make_heuristic(teacher.partition("@")[0], max_degree=config.max_degree)  # offered in the env's queue order
    policy.reset(np.random.default_rng(seed))
    obs, _ = env.reset(seed=seed)
    graph_of, dynamic, masks, actions, graphs = [], {}, [], [], {}
    bar = tqdm(total=steps, desc=f"recording {teacher}", unit="decision", disable=not progress, leave=False)
    while len(actions) < steps:
        key = env.job.graph.key
        mask = env.action_masks()
        action = teacher_action(policy.decide(env.job, env.sim.view()), env._table)
        obs_now = obs
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
            policy.reset(np.random.default_rng([seed, len(actions)]))  # a new episode: job ids start again
        if mask.sum() == 1:
            continue  # nothing to choose (only reject or hold is open): no lesson in it
        bar.update()
        graphs.setdefault(key, {k: obs_now[k] for k in GRAPH_KEYS})
        graph_of.append(key)
        for k, v in obs_now.items():
            if k not in GRAPH_KEYS:
                dynamic.setdefault(k, []).append(v)
        masks.append(mask)
        actions.append(action)
    bar.close()
    return Demonstrations(
        graph_of, graphs, {k: np.stack(v) for k, v in dynamic.items()}, np.stack(masks), np.asarray(actions, dtype=np.int64)
    )


def _collect_one(args: tuple) -> Demonstrations:
    config, teacher, steps, seed = args
    torch.set_num_threads(1)
    return collect(config, teacher, steps, seed)


def _collect_in_processes(config: EnvConfig, teacher: str, steps: int, seed: int, workers: int) -> Demonstrations:
    shares = [steps // workers + (w < steps % workers) for w in range(workers)]
    jobs = [(config, teacher, share, 1009 * seed + w + 1) for w, share in enumerate(shares) if share]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(_collect_one, jobs))
    return Demonstrations(
        [key for part in parts for key in part.graph_of],
        {key: arrays for part in parts for key, arrays in part.graphs.items()},
        {k: np.concatenate([part.dynamic[k] for part in parts]) for k in parts[0].dynamic},
        np.concatenate([part.masks for part in parts]),
        np.concatenate([part.actions for part in parts]),
    )


def clone(policy, data: Demonstrations, *, epochs: int, batch_size: int, learning_rate: float, seed: int) -> float:
    """Fit the policy's masked logits to the demonstrations; returns the final accuracy."""
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    policy.set_training_mode(True)
    for _ in range(epochs):
        for index in np.array_split(rng.permutation(len(data)), max(1, len(data) // batch_size)):
            logits = _masked_logits(policy, data.batch(index), torch.from_numpy(data.masks[index]))
            loss = F.cross_entropy(logits, torch.from_numpy(data.actions[index]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        index = np.arange(min(len(data), 2048))
        predicted = _masked_logits(policy, data.batch(index), torch.from_numpy(data.masks[index])).argmax(1).numpy()
    return float((predicted == data.actions[index]).mean())


def _masked_logits(policy, obs: dict[str, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    features = policy.extract_features(obs, policy.pi_features_extractor)
    logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
    return logits.masked_fill(~mask, -1e9)
