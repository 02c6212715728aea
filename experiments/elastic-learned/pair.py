"""Paired avoidable blocking of every policy of an evaluation against one (mean and 95 % interval over its streams, per
load and pooled), with each one's mean JCT and resizes a stream.

    python experiments/elastic-learned/pair.py experiments/elastic-learned/results/eval.json learned
"""

import json, sys, numpy as np
from placer.evaluate.stats import mean_ci95
runs = json.load(open(sys.argv[1]))["runs"]
ref = sys.argv[2]
by = {}
for r in runs: by.setdefault(r["policy"], {})[(r["load"], r["beta_dist"], r["seed"])] = r
for p in by:
    keys = sorted(by[p])
    d = [by[p][k]["avoidable_blocking_rate"] - by[ref][k]["avoidable_blocking_rate"] for k in keys]
    m, h = mean_ci95(d)
    for load in (0.9, 1.3):
        dl = [by[p][k]["avoidable_blocking_rate"] - by[ref][k]["avoidable_blocking_rate"] for k in keys if k[0]==load]
        ml, hl = mean_ci95(dl)
        print(f"  {p:12s} load {load}: {ml:+.4f} ± {hl:.4f}")
    print(f"{p:12s} pooled {m:+.4f} ± {h:.4f}  avoidable {np.mean([by[p][k]['avoidable_blocking_rate'] for k in keys]):.4f} JCT {np.mean([by[p][k]['mean_jct_s'] for k in keys]):.0f} resizes/stream {np.mean([by[p][k].get('resizes',0) for k in keys]):.1f}")
