"""How much of the return the arrivals decide: its variance with and without the input-dependent baseline.

    python experiments/studies/baseline_variance.py [--episodes 16] [--policy experiments/policies/regimes.pt] [--smoke]

Plays ``--episodes`` episodes of the policy file's own environment (greedy actions; seeds 10,000 on, apart from
training's) twice, once with the plain reward and once less what each episode's regime's member of ``best`` earns
on the same arrivals (``EnvConfig.baseline``, :mod:`placer.envs.baseline`; the members the policy's warm start recorded in
``<policy>.imitation.json``, else ``--baseline``). The actions and outcomes are the same both times, only the
rewards differ. Prints the variance of the discounted return-to-go (discount ``--gamma``, over every step: what
PPO's critic has to predict), what of it a linear critic on the state features (job, cluster, history, meter, the
mean server group) leaves unexplained, and the variance of the episode return, both ways, and their ratios. ``--smoke``: 2 episodes of 40
jobs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from placer.envs.config import EnvConfig
from placer.envs.env import ClusterPlacementEnv
from placer.envs.observation import GraphTable
from placer.policies.imitation import GreedyLearner
from placer.policies.model import load_policy_file

STATE_KEYS = ("job", "cluster", "history", "meter")  # what a critic reads of the state besides the graph and options


def returns(config: EnvConfig, policy, episodes: int, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(discounted return-to-go at every step, return of every episode, (steps, F) state features) of the greedy ``policy``."""
    env, drive = ClusterPlacementEnv(config), GreedyLearner(policy)
    to_go, totals, states = [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        rewards, done = [], False
        while not done:
            states.append(np.concatenate([obs[k] for k in STATE_KEYS if k in obs] + [obs["groups"].mean(0), [1.0]]))
            obs, reward, done, _, _ = env.step(drive(obs, env.action_masks()))
            rewards.append(reward)
        acc, out = 0.0, np.zeros(len(rewards))
        for t in range(len(rewards) - 1, -1, -1):
            acc = rewards[t] + gamma * acc
            out[t] = acc
        to_go.append(out)
        totals.append(sum(rewards))
    return np.concatenate(to_go), np.array(totals), np.array(states)


def unexplained(target: np.ndarray, states: np.ndarray) -> float:
    """The variance of ``target`` left after the least-squares linear fit on ``states`` (a critic's floor, in-sample)."""
    weights, *_ = np.linalg.lstsq(states, target, rcond=None)
    return float((target - states @ weights).var())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--policy", type=Path, default=Path(__file__).resolve().parents[2] / "experiments" / "policies" / "regimes.pt")
    parser.add_argument("--baseline", default="lean:admit=0.9", help="the heuristic when the policy recorded no members")
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--per-arrival", type=float, default=None, help="the potential's discount per arrival (default: --gamma)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.episodes < 1 or not 0 < args.gamma <= 1 or (args.per_arrival is not None and not 0 < args.per_arrival <= 1):
        parser.error("--episodes must be >= 1, --gamma and --per-arrival within (0, 1]")
    torch.set_num_threads(1)
    policy, config = load_policy_file(args.policy)
    policy.features_extractor.set_graphs(GraphTable.from_config(config))
    recorded = args.policy.with_suffix(".imitation.json")
    members = json.loads(recorded.read_text()).get("members") if recorded.exists() else None
    if args.smoke:
        args.episodes, config = 2, config.with_changes(jobs=40)
    plain = returns(config.with_changes(baseline=None), policy, args.episodes, args.gamma)
    shaped = config.with_changes(
        baseline=members or args.baseline, baseline_discount=args.gamma, baseline_arrival_discount=args.per_arrival
    )
    based = returns(shaped, policy, args.episodes, args.gamma)
    label = "each regime's member of best" if members else args.baseline
    print(f"{args.policy.name}, {args.episodes} episodes of {config.workload.jobs} jobs, baseline: {label}")
    rows = (
        ("discounted return-to-go", plain[0].var(), based[0].var()),
        ("  what a linear critic leaves", unexplained(plain[0], plain[2]), unexplained(based[0], based[2])),
        ("episode return", plain[1].var(), based[1].var()),
    )
    for name, raw, less in rows:
        print(f"variance, {name:<30} {raw:9.2f} plain, {less:8.2f} less the baseline (plain / shaped: {raw / max(less, 1e-12):.1f})")
    print(f"steps per arrival: {len(plain[0]) / (args.episodes * config.workload.jobs):.2f}")


if __name__ == "__main__":
    main()
