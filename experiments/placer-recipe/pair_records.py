"""Pair policies recorded in different ``compare.py`` reports (their ``rates``, stream by stream on the same 148
validation streams) per cluster and load, without measuring anything again.

    python experiments/placer-recipe/pair_records.py A=REPORT:NAME B=REPORT:NAME [...] [--config CONFIG] [--json OUT]

Each ``LABEL=REPORT:NAME`` is a policy's rates: ``NAME`` (``student``, ``shipped``, ``rl-winner`` or ``best``) in the
report ``REPORT``. Every report must be on the streams of ``--config``'s distil stage (checked by their ``best`` rates,
which are the same for every report of those streams). Prints each label's mean per cluster and load, and the paired
difference of every later label less the first (95 % interval; positive: the later one blocks more).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from placer.evaluate.stats import mean_ci95
from placer.policies.recipe import load_recipe
from placer.policies.validation import validation_regimes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", help="LABEL=REPORT:NAME, the first the reference of the differences")
    parser.add_argument("--config", type=Path, default=Path("experiments/placer-recipe/margin-0.toml"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    recipe = load_recipe(args.config, Path("runs/pair"))
    regimes = validation_regimes(recipe.distil.config.env, recipe.section.validation_episodes)
    rates, best = {}, None
    for item in args.policies:
        label, _, source = item.partition("=")
        path, _, name = source.rpartition(":")
        report = json.loads(Path(path).read_text())
        if best is None:
            best = report["rates"]["best"]
        elif not np.allclose(report["rates"]["best"], best):
            raise SystemExit(f"{path} is not on the same streams as the first report")
        rates[label] = np.asarray(report["rates"][name])
    if len(next(iter(rates.values()))) != len(regimes):
        raise SystemExit(f"the reports hold {len(next(iter(rates.values())))} streams; {args.config} validates on {len(regimes)}")
    groups: dict[tuple[str, float], list[int]] = {}
    for i, regime in enumerate(regimes):
        groups.setdefault((regime.cluster, regime.load), []).append(i)
    groups[("pooled", float("nan"))] = list(range(len(regimes)))
    first, *later = rates
    rows = []
    for (cluster, load), index in groups.items():
        row: dict = {"cluster": cluster, "load": load, "streams": len(index), **{k: float(r[index].mean()) for k, r in rates.items()}}
        for label in later:
            mean, half = mean_ci95((rates[label][index] - rates[first][index]).tolist())
            row[f"{label} - {first}"] = {"mean": mean, "half": half}
        rows.append(row)
        differences = {label: row[f"{label} - {first}"] for label in later}
        cells = "  ".join(f"{label} - {first} {d['mean']:+.4f} ± {d['half']:.4f}" for label, d in differences.items())
        means = "  ".join(f"{k} {row[k]:.4f}" for k in rates)
        print(f"{cluster:<8} {load:>4} ({len(index):>3})  {means}  {cells}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
