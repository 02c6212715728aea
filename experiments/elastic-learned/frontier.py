"""Issue 52's two bars side by side, from the recorded result files of the README's regimes: in each regime and load, which
measured policies keep mean JCT within 1.25x `para_max`'s, and how many avoidable jobs they block beside `best`.

    python experiments/elastic-learned/frontier.py [--json OUT.json]

Reads `docs/results/` (families-*, blend-quiet-figures, elastic-regimes): every fixed family, `best`, `adaptive`, the
shipped learned policy (`learned:blend-quiet`) and the older learned ones, ElasticFlow, Chronus, `elastic_lean` and
`elastic-best`, paired on the same streams (10 seeds x beta A-D). Prints, per regime and load: `para_max`'s JCT, the
policy with the least avoidable blocking among those within the JCT bar (its blocking minus `best`'s, 95 % interval), and
the least-blocking policy overall with its JCT as a multiple of `para_max`'s.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
REGIMES = {  # regime -> the result files holding its runs
    "dgx8x8, Poisson": ("families-loads/results.json", "blend-quiet-figures/dgx8x8-poisson.json", "elastic-regimes/dgx8x8-poisson"),
    "mixed, Poisson": ("families-loads-mixed/results.json", "blend-quiet-figures/mixed-poisson.json", "elastic-regimes/mixed-poisson"),
    "dgx8x8, daily": ("families-daily/results.json", "blend-quiet-figures/dgx8x8-daily.json", "elastic-regimes/dgx8x8-daily"),
    "mixed, daily": ("families-daily-mixed/results.json", "blend-quiet-figures/mixed-daily.json", "elastic-regimes/mixed-daily"),
    "dgxh100, Poisson": (
        "families-loads-dgxh100/results.json",
        "blend-quiet-figures/dgxh100-poisson.json",
        "elastic-regimes/dgxh100-poisson",
    ),
    "dgx8x8, Philly arrivals": (
        "families-philly/results.json",
        "blend-quiet-figures/dgx8x8-philly-arrivals.json",
        "elastic-regimes/dgx8x8-philly-arrivals",
    ),
}
JCT_BAR = 1.25  # issue 52: mean JCT within 1.25x para_max's


def runs_of(files: tuple[str, ...]) -> list[dict]:
    """Every run of a regime's files (an elastic-regimes stem names its untuned and `-tuned` files)."""
    paths = [RESULTS / f for f in files[:2]] + [RESULTS / f"{files[2]}.json", RESULTS / f"{files[2]}-tuned.json"]
    return [run for path in paths for run in json.loads(path.read_text())["runs"]]


def paired(runs: list[dict], load: float) -> dict[str, dict[tuple, dict]]:
    """policy -> (beta, seed) -> run, at ``load``."""
    table: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for run in runs:
        if run["load"] == load:
            table[run["policy"]][(run["beta_dist"], run["seed"])] = run
    return table


def frontier(table: dict[str, dict[tuple, dict]]) -> dict:
    """The regime-load row: para_max's JCT, the best policy within the JCT bar and the least-blocking one overall."""
    keys = sorted(table["best"])
    best = np.array([table["best"][k]["avoidable_blocking_rate"] for k in keys])
    para_max_jct = float(np.mean([table["para_max"][k]["mean_jct_s"] for k in keys]))
    rows = []
    for policy, runs in table.items():
        diff = np.array([runs[k]["avoidable_blocking_rate"] for k in keys]) - best
        jct = float(np.mean([runs[k]["mean_jct_s"] for k in keys]))
        half = float(1.96 * diff.std(ddof=1) / np.sqrt(len(diff)))
        rows.append({"policy": policy, "minus_best": float(diff.mean()), "half_width": half, "jct_vs_para_max": jct / para_max_jct})
    within = [r for r in rows if r["jct_vs_para_max"] <= JCT_BAR]
    return {
        "para_max_jct_s": para_max_jct,
        "best_avoidable": float(best.mean()),
        "best_within_jct_bar": min(within, key=lambda r: r["minus_best"]),
        "least_blocking": min(rows, key=lambda r: r["minus_best"]),
        "policies": len(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    out = {}
    print("| regime | load | para_max JCT | best within 1.25x its JCT: minus best | least blocking: minus best, JCT / para_max's |")
    print("|---|---:|---:|---|---|")
    for regime, files in REGIMES.items():
        runs = runs_of(files)
        for load in sorted({run["load"] for run in runs}):
            row = frontier(paired(runs, load))
            out[f"{regime} @ {load}"] = row
            w, lb = row["best_within_jct_bar"], row["least_blocking"]
            print(
                f"| {regime} | {load} | {row['para_max_jct_s']:.0f} s | `{w['policy']}` {w['minus_best']:+.3f} ± {w['half_width']:.3f} "
                f"| `{lb['policy']}` {lb['minus_best']:+.3f} ± {lb['half_width']:.3f}, {lb['jct_vs_para_max']:.1f}x |"
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
