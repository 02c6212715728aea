"""The shipped policy as an elastic one, untrained for resizes: its weights widened with zeros for the ``resize``
features (:func:`placer.policies.model.widened_for_resizes`), so it decides every arriving job as the shipped policy does and
answers resize offers with the same network's option scores.

    python experiments/elastic-learned/widen.py data/policies/placer.pt runs/elastic/widened.pt [--offers 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from placer.policies.model import build_policy, save_policy_file, widened_for_resizes
from placer.policies.policy_file import read_policy_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--offers", type=int, default=1, help="resize offers per rebalance point (EnvConfig.resize_offers)")
    args = parser.parse_args()
    payload = read_policy_file(args.policy)
    env = payload.env.with_changes(elastic=True, resize_offers=args.offers)
    architecture = {"hidden": payload.hidden, "rounds": payload.rounds, "net_arch": list(payload.net_arch)}
    policy = build_policy(env, architecture["hidden"], architecture["rounds"], architecture["net_arch"])
    weights = widened_for_resizes({k: torch.from_numpy(v.copy()) for k, v in payload.state_dict.items()})
    policy.load_state_dict(weights)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_policy_file(args.out, policy, env, architecture)
    print(f"{args.out}: {args.policy} widened for resizes ({args.offers} offer(s) per rebalance point)")


if __name__ == "__main__":
    main()
