"""Avoidable blocking of every policy in one or more results files of the same streams, paired against one of them by
(load, beta distribution, seed): mean difference, 95 % interval and relative change, per load and pooled, with mean JCT.

    python experiments/real-arrivals-room/pair.py best docs/results/families-philly/results.json \
        docs/results/blend-quiet-figures/dgx8x8-philly-arrivals.json experiments/real-arrivals-room/results/hindsight.json \
        --loads 0.9,1.3
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import fmean

from placer.evaluate.stats import mean_ci95

POOLED = object()  # the row over every load (a replayed trace's runs record load None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="the policy every other is paired against")
    parser.add_argument("results", nargs="+", type=Path, help="results.json files of the same streams")
    parser.add_argument("--loads", help="only these loads (comma-separated); default every load")
    args = parser.parse_args()
    wanted = {float(x) for x in args.loads.split(",")} if args.loads else None
    by: dict[str, dict[tuple, dict]] = {}
    for path in args.results:
        data = json.loads(path.read_text())
        trace = bool(data["record"]["config"].get("trace"))  # a replayed trace's runs: load None (0.9 in older files)
        for run in data["runs"]:
            load = None if trace else run["load"]
            if wanted is None or load in wanted:
                by.setdefault(run["policy"], {})[(load, run["beta_dist"], run["seed"])] = run
    reference = by[args.reference]
    print(f"avoidable blocking minus {args.reference}'s (95 % interval; relative to its mean), mean JCT")
    for policy, mine in by.items():
        keys = sorted(set(mine) & set(reference), key=_order)
        for load in [*dict.fromkeys(k[0] for k in keys), POOLED]:
            at = [k for k in keys if load is POOLED or k[0] == load]
            diff, half = mean_ci95([mine[k]["avoidable_blocking_rate"] - reference[k]["avoidable_blocking_rate"] for k in at])
            base = fmean(reference[k]["avoidable_blocking_rate"] for k in at)
            jct = fmean(mine[k]["mean_jct_s"] for k in at)
            where = "pooled" if load is POOLED else "trace" if load is None else f"load {load}"
            print(f"  {policy:32s} {where:9s} {diff:+.4f} ± {half:.4f} ({diff / base:+.1%}), {len(at)} streams, JCT {jct:.0f} s")


def _order(key: tuple) -> tuple:
    """A stream key (load, beta, seed) in order, a trace's (load None) after every load."""
    return (key[0] is None, key[0] or 0.0, *key[1:])


if __name__ == "__main__":
    main()
