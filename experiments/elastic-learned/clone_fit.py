"""How well a small network clones a teacher on the fixed and on the elastic env (the elastic recipe's quick smoke).

    python experiments/elastic-learned/clone_fit.py experiments/elastic-learned/results/clone-fit.json

The quick elastic recipe (recipe-quick.toml) recorded 600 decisions, cloned them for 3 epochs and got a student that
rejects every job. This measures, on that recipe's clone [env], the action accuracy of a fresh network (hidden 16, 2
rounds) cloned from 600 decisions of each teacher for 3 and 20 epochs, with the share of labels that are action 0
(reject at an arrival, keep at a resize offer). Each accuracy is also split by the kind of decision (arrival or resize
offer), and the 20-epoch fit repeated at the recipe's width (hidden 64, 3 rounds).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from envs.observation import GraphTable
from policies.imitation import Demonstrations, agreement, clone, collect
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
        for epochs, hidden, rounds, name in ((3, 16, 2, "3_epochs"), (20, 16, 2, "20_epochs"), (20, 64, 3, "20_epochs_wide")):
            torch.manual_seed(0)
            policy = build_policy(config, hidden, rounds, [64, 64], GraphTable.from_config(config))
            row[f"accuracy_{name}"] = clone(policy, data, epochs=epochs, batch_size=128, learning_rate=1e-3, seed=0)
            for kind, chosen in (("arrivals", ~resize), ("resize_offers", resize)):
                if chosen.any():
                    row[f"accuracy_{name}_{kind}"] = agreement(policy, _subset(data, np.flatnonzero(chosen)))
        rows.append(row)
        print(json.dumps(row))
    out.write_text(json.dumps(rows, indent=1) + "\n")


def _subset(data: Demonstrations, index: np.ndarray) -> Demonstrations:
    """The demonstrations at ``index``."""
    dynamic = {key: value[index] for key, value in data.dynamic.items()}
    return Demonstrations(dynamic, data.masks[index], data.actions[index], data.returns[index], data.targets[index])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
