"""How well a small network clones a teacher on the fixed and on the elastic env (the elastic recipe's quick smoke).

    python experiments/elastic-learned/clone_fit.py experiments/elastic-learned/results/clone-fit.json

The quick elastic recipe (recipe-quick.toml) recorded 600 decisions, cloned them for 3 epochs and got a student that
rejects every job. This measures, on that recipe's clone [env], the action accuracy of a fresh network (hidden 16, 2
rounds) cloned from 600 decisions of each teacher for 3 and 20 epochs, with the share of labels that are action 0
(reject at an arrival, keep at a resize offer).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from envs.observation import GraphTable
from policies.imitation import clone, collect
from policies.model import build_policy
from policies.recipe import load_recipe

CASES = (("lean", False), ("lean", True), ("elastic_lean", True), ("chronus", True))


def main(out: Path) -> None:
    env = load_recipe(Path(__file__).with_name("recipe-quick.toml"), out.parent / "clone-fit-run").clone.config.env
    rows = []
    for teacher, elastic in CASES:
        config = env.with_changes(elastic=elastic)
        data = collect(config, teacher, 600, seed=1, per_episode=100)
        resize = data.dynamic["resize"][:, 0] == 1 if "resize" in data.dynamic else data.actions < 0
        row = {"teacher": teacher, "elastic": elastic, "samples": len(data), "resize_offers": int(resize.sum())}
        row["label_0_share"] = float((data.actions == 0).mean())
        for epochs in (3, 20):
            torch.manual_seed(0)
            policy = build_policy(config, 16, 2, [64, 64], GraphTable.from_config(config))
            row[f"accuracy_{epochs}_epochs"] = clone(policy, data, epochs=epochs, batch_size=128, learning_rate=1e-3, seed=0)
        rows.append(row)
        print(json.dumps(row))
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
