"""How decisions change from the old cost model (``sipml``, PAC-ML's op splitting) to the new
one (``auto``: the fastest data x tensor x pipeline split), on the same job streams.

    python experiments/studies/decisions.py [--seeds 3] [--jobs 500] [--policy-file data/policies/pacml.pt] [--smoke]

For each cluster, cost model and policy: blocking rate, mean degree of accepted jobs, servers
spanned per accepted job and the mix of strategies, averaged over beta distributions A-D and seeds.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from placer.evaluate import EvaluationConfig, evaluate
from placer.graphs.catalog import PACML_GRAPHS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--policies", default="para_min+best_fit,lean,learned")
    parser.add_argument("--policy-file", default="data/policies/pacml.pt")
    parser.add_argument("--smoke", action="store_true", help="one seed of 10 jobs, heuristics only")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.jobs, args.policies = 1, 10, "para_min+best_fit,lean"
    print("| cluster | cost model | policy | blocking | mean degree | servers spanned | strategies (share of accepted jobs) |")
    print("|---|---|---|---:|---:|---:|---|")
    for cluster in ("pacml", "dgx8x8"):
        for strategy in ("sipml", "auto"):
            config = EvaluationConfig(
                cluster=cluster,
                graphs=list(PACML_GRAPHS),
                beta_dists=["A", "B", "C", "D"],
                load=0.9,
                jobs=args.jobs,
                seeds=args.seeds,
                policies=args.policies.split(","),
                policy_file=args.policy_file,
                strategy=strategy,
            )
            by_policy = defaultdict(list)
            for run in evaluate(config).runs:
                by_policy[run["policy"]].append(run)
            for policy, runs in by_policy.items():
                mix: dict[str, float] = defaultdict(float)
                for run in runs:
                    for kind, share in run["strategy_mix"].items():
                        mix[kind] += share / len(runs)
                mixed = ", ".join(f"{kind} {share:.0%}" for kind, share in sorted(mix.items(), key=lambda kv: -kv[1]) if share >= 0.005)
                print(
                    f"| {cluster} | {strategy} | {policy} | {np.mean([r['blocking_rate'] for r in runs]):.3f} "
                    f"| {np.nanmean([r['mean_degree'] or np.nan for r in runs]):.2f} "
                    f"| {np.nanmean([r['mean_servers'] or np.nan for r in runs]):.2f} | {mixed} |"
                )


if __name__ == "__main__":
    main()
