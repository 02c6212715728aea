"""The recipe's student (and its RL winner) against the shipped policy, and each against ``best``, paired on the recipe's
validation streams.

    python experiments/placer-recipe/compare.py [--out runs/placer] [--shipped data/policies/placer.pt] [--workers 2]
        [--rl-winner] [--json experiments/placer-recipe/run-2026-11-26/compare.json]

The streams are the ones the recipe validates on (the distil stage's environment: every cluster x load x setting of
``data/configs/placer.toml``, ``validation_episodes`` seeds each, apart from every training and tuning stream), so the
rows pair stream by stream: per regime, the mean blocking rate of each policy and the paired difference shipped -
student with its 95 % interval (positive: the student blocks less). ``best``'s rates are read from ``OUT/rates.json``
when the recipe measured them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from placer.evaluate.stats import mean_ci95
from placer.policies.recipe import load_recipe
from placer.policies.validation import RatesCache, regime_rows, validation_regimes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/placer"), help="the recipe's output folder")
    parser.add_argument("--config", type=Path, default=Path("data/configs/placer.toml"))
    parser.add_argument("--shipped", type=Path, default=Path("data/policies/placer.pt"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="where to write the rows (default: print only)")
    parser.add_argument("--rl-winner", action="store_true", help="pair OUT/rl-winner.pt too (against best and the shipped)")
    args = parser.parse_args()
    recipe = load_recipe(args.config, args.out)
    env, episodes = recipe.distil.config.env, recipe.section.validation_episodes
    regimes = validation_regimes(env, episodes)
    policies = {"shipped": args.shipped, "student": args.out / "distil" / "policy.pt"}
    if args.rl_winner:
        policies["rl-winner"] = args.out / "rl-winner.pt"
    cache = RatesCache(args.out / "rates.json")  # policy files kept by content: a rerun measures only what changed
    rates = {}
    for name, path in policies.items():
        if not path.exists():
            raise SystemExit(f"{path} does not exist yet ({name}); the rates measured so far are kept in {cache.path}")
        rates[name] = cache.file_rates(path, env, episodes, args.workers)
    rates["best"] = cache.rates("best", env, episodes, args.workers)
    pooled = {name: float(np.mean(r)) for name, r in rates.items()}
    diff, half = mean_ci95((rates["shipped"] - rates["student"]).tolist())
    report = {
        "streams": len(regimes),
        "mean_blocking": pooled,
        "shipped_minus_student": {"mean": diff, "half": half},
        "student_vs_shipped": [r.model_dump() for r in regime_rows(rates["student"], rates["shipped"], regimes)],
        "student_vs_best": [r.model_dump() for r in regime_rows(rates["student"], rates["best"], regimes)],
        "shipped_vs_best": [r.model_dump() for r in regime_rows(rates["shipped"], rates["best"], regimes)],
        **(
            {
                "rl_winner_vs_best": [r.model_dump() for r in regime_rows(rates["rl-winner"], rates["best"], regimes)],
                "rl_winner_vs_shipped": [r.model_dump() for r in regime_rows(rates["rl-winner"], rates["shipped"], regimes)],
            }
            if args.rl_winner
            else {}
        ),
        "by_cluster_load": by_cluster_load(rates, regimes),
        "rates": {name: r.tolist() for name, r in rates.items()},
    }
    print(json.dumps({k: report[k] for k in ("streams", "mean_blocking", "shipped_minus_student")}, indent=1))
    for row in regime_rows(rates["student"], rates["shipped"], regimes):
        gap = f"shipped - student {row.difference:+.4f} ± {row.half:.4f}"
        print(f"{row.regime:60s} student {row.learned:.4f}  shipped {row.reference:.4f}  {gap}")
    for row in report["by_cluster_load"]:
        means = "  ".join(f"{name} {row[name]:.4f}" for name in rates)
        gaps = "  ".join(f"{pair} {gap['mean']:+.4f} ± {gap['half']:.4f}" for pair, gap in row["differences"].items())
        print(f"{row['cluster']:8s} {row['load']:4} ({row['streams']:2d} streams)  {means}  {gaps}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


def by_cluster_load(rates: dict[str, np.ndarray], regimes: list) -> list[dict]:
    """Per cluster and load (arrival structures pooled): each policy's mean blocking, and the paired differences
    student - RL winner (the student's imitation of its teacher where the RL winner teaches) and RL winner - shipped,
    each with its 95 % interval (positive: the first blocks more)."""
    groups: dict[tuple[str, float], list[int]] = {}
    for i, regime in enumerate(regimes):
        groups.setdefault((regime.cluster, regime.load), []).append(i)
    pairs = [("student", "rl-winner"), ("rl-winner", "shipped"), ("student", "shipped")]
    rows = []
    for (cluster, load), index in groups.items():
        differences = {}
        for a, b in pairs:
            if a in rates and b in rates:
                mean, half = mean_ci95((rates[a][index] - rates[b][index]).tolist())
                differences[f"{a} - {b}"] = {"mean": mean, "half": half}
        means = {name: float(r[index].mean()) for name, r in rates.items()}
        rows.append({"cluster": cluster, "load": load, "streams": len(index), **means, "differences": differences})
    return rows


if __name__ == "__main__":
    main()
