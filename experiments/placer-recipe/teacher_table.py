"""Is the distil student's loss to ``best`` its imitation or its teacher? The student's teacher is ``best``'s table
pooled over beta distributions and arrival structures (one member per cluster and load: it reads the measured load, not
the regime), while the validation's ``best`` is told each workload. This runs that pooled table's members on the
recipe's validation streams of the named clusters and pairs, per regime, the table against ``best`` and the student
against the table, then the student against the table per load over every arrival structure (all rates but the
members' read from ``OUT/rates.json``).

    python experiments/placer-recipe/teacher_table.py [--out runs/placer] [--clusters dgx8x8] [--workers 2] [--json F]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from placer.evaluate.runner import tasks
from placer.policies.recipe import load_recipe
from placer.policies.validation import RatesCache, config_rates, regime_rows, validation_configs, validation_regimes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/placer"), help="the recipe's output folder")
    parser.add_argument("--config", type=Path, default=Path("data/configs/placer.toml"))
    parser.add_argument("--clusters", default="dgx8x8", help="comma-separated: the clusters whose streams are run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    recipe = load_recipe(args.config, args.out)
    env, episodes = recipe.distil.config.env, recipe.section.validation_episodes
    table = {"|".join(k.split("|")[:2]): v for k, v in json.loads((args.out / "distil" / "members.json").read_text())["members"].items()}
    regimes = validation_regimes(env, episodes)
    configs = list(validation_configs(env, episodes, "learned"))
    cache = RatesCache(args.out / "rates.json")
    best = cache.rates("best", env, episodes, args.workers)
    student = cache.file_rates(args.out / "distil" / "policy.pt", env, episodes, args.workers)
    clusters = args.clusters.split(",")
    teacher = np.full(len(regimes), np.nan)
    offsets = np.cumsum([0, *(len(tasks(c)) for c in configs)])
    ours = {c.model_dump_json(): c for c in configs if c.cluster in clusters}  # a repeated setting's evaluation once
    for member in sorted({m for key, m in table.items() if key.split("|")[0] in clusters}):
        named = [c.model_copy(update={"policies": [member]}) for c in ours.values()]
        measured = dict(zip(ours, config_rates(member, named, args.workers, progress=True), strict=True))
        for config, start in zip(configs, offsets[:-1], strict=True):
            for i, rate in enumerate(measured.get(config.model_dump_json(), [])):
                if table[f"{regimes[start + i].cluster}|{regimes[start + i].load:g}"] == member:
                    teacher[start + i] = rate
    keep = ~np.isnan(teacher)
    kept = [r for r, k in zip(regimes, keep, strict=True) if k]
    by_load = [r.pooled(["structure"]) for r in kept]  # each load over Poisson, daily and replayed arrivals
    rows = {
        "table_vs_best": regime_rows(teacher[keep], best[keep], kept),
        "student_vs_table": regime_rows(student[keep], teacher[keep], kept),
        "student_vs_table_by_load": regime_rows(student[keep], teacher[keep], by_load),
    }
    for name, found in rows.items():
        print(name)
        for row in found:
            print(f"  {row.regime:62s} {row.learned:.4f} {row.reference:.4f} {row.difference:+.4f} ± {row.half:.4f}")
    print(f"streams {keep.sum()} of {len(configs)} evaluations' {len(regimes)}")
    if args.json is not None:
        args.json.write_text(json.dumps({k: [r.model_dump() for r in v] for k, v in rows.items()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
