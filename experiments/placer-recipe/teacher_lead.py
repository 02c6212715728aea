"""How sure is the distil stage's choice of teacher? The RL winner's lead over the heuristic families' best, per cluster
and load, as a paired 95 % interval over the tuning streams the recipe scored them on.

    python experiments/placer-recipe/teacher_lead.py --config runs/placer/distil/config.json \
        --candidate runs/placer/rl-winner.pt --members experiments/placer-recipe/run-2026-11-26/distil.members.json \
        --clusters dgx8x8 [--json OUT]

``--config`` is a stage's resolved ``config.json`` or a training config (TOML).

The recipe's rule (``teacher_margin = 0.1``) takes the RL winner only where its mean avoidable blocking is 10 % below
the families' best; this prints, beside each group's two means, the per-stream paired difference (families' best -
RL winner: positive, the winner blocks less) with its 95 % interval over every tuning stream of the group (4 streams x
4 beta distributions x 2 structures), so that a lead under the margin can be told apart from noise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from placer.baselines.best import TUNING_METRIC
from placer.baselines.registry import make_heuristic, make_policy
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.envs.env import regimes, variant_of
from placer.evaluate.stats import mean_ci95
from placer.graphs.catalog import resolve_graph
from placer.policies.config import TrainConfig, load_train_config
from placer.policies.teachers import _tuning, candidate_context


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, required=True)
    parser.add_argument("--members", type=Path, required=True)
    parser.add_argument("--clusters", default="dgx8x8")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.config.suffix == ".toml":
        config = load_train_config(args.config)
    else:  # a stage's resolved config.json
        config = TrainConfig.model_validate(json.loads(args.config.read_text()))
    env = config.env
    saved = json.loads(args.members.read_text())["tuning"]
    groups: dict = {}
    for row in regimes(env):
        groups.setdefault(row.pooled(config.train.teacher_pooled), []).append(row)
    out = []
    for group, rows in groups.items():
        if rows[0].cluster not in args.clusters.split(","):
            continue
        family = next(name for name in saved[group.key] if name != "learned")
        cluster = load_cluster(rows[0].cluster)
        cost = CostModel(cluster, strategy=env.strategy)
        heuristic = make_heuristic(family, max_degree=env.max_degree)
        learned = make_policy("learned", candidate_context(cluster, env.max_degree, str(args.candidate)))
        diffs, fam, cand = [], [], []
        for row in rows:
            workload = variant_of(env, row).workload
            tuning = _tuning(row, workload, cost, [resolve_graph(g) for g in workload.graphs])
            a, b = tuning.per_stream(heuristic, TUNING_METRIC), tuning.per_stream(learned, TUNING_METRIC)
            fam += a
            cand += b
            diffs += [x - y for x, y in zip(a, b, strict=True)]
        lead, half = mean_ci95(diffs)  # the interval the recipe's teacher_resolved reads (placer.policies.teachers._scored)
        record = {
            "group": group.key,
            "family_best": family,
            "family": float(np.mean(fam)),
            "learned": float(np.mean(cand)),
            "lead": lead,
            "half": half,
            "streams": len(diffs),
            "saved": saved[group.key],
        }
        out.append(record)
        share = lead / max(record["family"], 1e-12)
        print(
            f"{group.key}: {family} {record['family']:.4f}, candidate {record['learned']:.4f}, "
            f"lead {lead:+.4f} ± {half:.4f} over {len(diffs)} streams ({share:+.1%})",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
