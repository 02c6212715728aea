"""Paired avoidable blocking of every policy of an evaluation against one (mean and 95 % interval over its streams, per
load and pooled), with each one's mean JCT and resizes a stream.

    python experiments/elastic-learned/pair.py experiments/elastic-learned/results/eval.json learned
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import fmean

from placer.evaluate.stats import mean_ci95


def main() -> None:
    runs, reference = json.loads(Path(sys.argv[1]).read_text())["runs"], sys.argv[2]
    by: dict[str, dict[tuple, dict]] = {}
    for run in runs:
        by.setdefault(run["policy"], {})[(run["load"], run["beta_dist"], run["seed"])] = run
    for policy, mine in by.items():
        keys = sorted(mine)
        for load in sorted({k[0] for k in keys}):
            diff, half = mean_ci95(
                [mine[k]["avoidable_blocking_rate"] - by[reference][k]["avoidable_blocking_rate"] for k in keys if k[0] == load]
            )
            print(f"  {policy:12s} load {load}: {diff:+.4f} ± {half:.4f}")
        diff, half = mean_ci95([mine[k]["avoidable_blocking_rate"] - by[reference][k]["avoidable_blocking_rate"] for k in keys])
        avoidable, jct = fmean(mine[k]["avoidable_blocking_rate"] for k in keys), fmean(mine[k]["mean_jct_s"] for k in keys)
        resizes = fmean(mine[k].get("resizes", 0) for k in keys)
        print(f"{policy:12s} pooled {diff:+.4f} ± {half:.4f}  avoidable {avoidable:.4f}  JCT {jct:.0f} s  resizes/stream {resizes:.1f}")


if __name__ == "__main__":
    main()
