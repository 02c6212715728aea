"""How many decisions one teacher episode takes in each regime of a training config: what a warm start's budget of
``imitation_steps`` decisions buys in episodes, and so in regimes covered.

    python experiments/studies/demonstration_steps.py [--config experiments/configs/clone.toml]
        [--members experiments/policies/clone.imitation.json] [--seed 1] [--smoke]

For each cluster x load of every setting of ``--config`` (beta C, Poisson arrivals: one stream each, seed ``--seed``),
plays one episode of the member of ``best`` that the warm start recorded for that regime (``--members``: a
``*.imitation.json`` or ``members.json`` with a ``members`` table) and prints its decisions with a choice, the ones a
warm start records (at most ``imitation_per_episode`` of them, when the config sets it), and the jobs.
``--smoke``: the first two regimes, 40 jobs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from placer.envs.config import EnvConfig
from placer.envs.env import ClusterPlacementEnv
from placer.envs.regime import Regime
from placer.policies.config import load_train_config
from placer.policies.imitation import teacher_action
from placer.policies.teachers import Teachers

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"  # the retired clone this analysis is of


def regimes_to_play(config: EnvConfig) -> list[EnvConfig]:
    """One single-regime config per cluster x load of each setting of ``config`` (beta C, Poisson arrivals)."""
    return [
        variant.with_changes(clusters=(cluster,), loads=(load,), beta_dists=("C",), structure=("iid",), settings=())
        for variant in config.variants
        for cluster in variant.clusters
        for load in variant.load_values
    ]


def decisions(config: EnvConfig, members: dict[str, str], seed: int) -> tuple[dict, str, int]:
    """(the ``reset`` info, the member that plays, its decisions with a choice) over one episode of ``config``'s one
    regime; a ``LookupError`` naming the regime when ``members`` has none for it."""
    env = ClusterPlacementEnv(config)
    _, info = env.reset(seed=seed)
    key = Regime.from_info(info).key
    if key not in members:
        raise LookupError(key)
    policy = Teachers("best", config.max_degree, members).for_episode(info)
    policy.reset(np.random.default_rng(seed))
    chosen, done = 0, False
    while not done:
        mask = env.action_masks()
        action = teacher_action(policy.decide(env.offer.job, env.offer.view), env.offer.options)
        chosen += int(mask.sum() > 1)
        _, _, done, _, _ = env.step(action)
    return info, policy.name, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=EXPERIMENTS / "configs" / "clone.toml")
    parser.add_argument(
        "--members", type=Path, default=Path(__file__).resolve().parents[2] / "experiments" / "policies" / "clone.imitation.json"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    train_config = load_train_config(args.config)
    config, cap = train_config.env, train_config.train.imitation_per_episode
    try:
        members = dict(json.loads(args.members.read_text())["members"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"--members {args.members}: no table of regime -> member ({exc})")
    plays = regimes_to_play(config)
    if args.smoke:
        plays = [c.with_changes(jobs=40) for c in plays[:2]]
    print(f"{args.config.name}: one teacher episode per regime (beta C, Poisson arrivals, seed {args.seed})")
    print(f"imitation_steps = {train_config.train.imitation_steps:,}, imitation_per_episode = {cap or 'all'}")
    print("| regime | member | jobs | decisions with a choice | per job | recorded of them |\n|---|---|---:|---:|---:|---:|")
    for play in plays:
        try:
            info, member, chosen = decisions(play, members, args.seed)
        except LookupError as exc:
            parser.error(f"--members has no member for {exc.args[0]} (recorded for another config?)")
        jobs = play.workload.jobs
        name = f"{info['cluster']}, load {info['load']}, queue {info['queue']}"
        print(f"| {name} | {member} | {jobs} | {chosen:,} | {chosen / jobs:.1f} | {min(chosen, cap or chosen):,} |")


if __name__ == "__main__":
    main()
