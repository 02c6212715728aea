"""How well a small network clones a teacher on the fixed and on the elastic env (the elastic recipe's quick smoke).

    python experiments/elastic-learned/clone_fit.py experiments/elastic-learned/results/clone-fit.json [CASE ...]

The quick elastic recipe (recipe-quick.toml) recorded 600 decisions, cloned them for 3 epochs and got a student that
rejects every job. This measures, on that recipe's clone [env], the action accuracy of a fresh network (hidden 16, 2
rounds) cloned from 600 decisions of each teacher for 3 and 20 epochs, with the share of labels that are action 0
(reject at an arrival, keep at a resize offer). Each accuracy is also split by the kind of decision (arrival or resize
offer), and the 20-epoch fit repeated at the recipe's width (hidden 64, 3 rounds). A case with advisers shows the
network the elastic heuristics' decisions, at resize offers too (``placer.envs.advice``). Naming cases (``elastic_lean+advised``)
runs only those, and replaces their rows in the results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from placer.envs.observation import GraphTable
from placer.policies.imitation import Demonstrations, agreement, clone, collect
from placer.policies.model import build_policy
from placer.policies.recipe import load_recipe

ELASTIC_ADVISERS = ("elastic_lean", "elasticflow", "chronus")
CASES = {  # name: (teacher, elastic, advisers)
    "lean+fixed": ("lean", False, ()),
    "lean": ("lean", True, ()),
    "elastic_lean": ("elastic_lean", True, ()),
    "chronus": ("chronus", True, ()),
    "elastic_lean+advised": ("elastic_lean", True, ELASTIC_ADVISERS),
    "chronus+advised": ("chronus", True, ELASTIC_ADVISERS),
}


def main(out: Path, names: list[str]) -> None:
    env = load_recipe(Path(__file__).with_name("recipe-quick.toml"), out.parent / "clone-fit-run").clone.config.env
    kept = [row for row in json.loads(out.read_text()) if row.get("case") not in names] if names and out.exists() else []
    rows = []
    for name in names or list(CASES):
        teacher, elastic, advisers = CASES[name]
        config = env.with_changes(elastic=elastic, advisers=advisers)
        data = collect(config, teacher, 600, seed=1, per_episode=100)
        resize = data.dynamic["resize"][:, 0] == 1 if "resize" in data.dynamic else data.actions < 0
        row = {"case": name, "teacher": teacher, "elastic": elastic, "advisers": list(advisers), "samples": len(data)}
        row["resize_offers"] = int(resize.sum())
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
    out.write_text(json.dumps(kept + rows, indent=1) + "\n")


def _subset(data: Demonstrations, index: np.ndarray) -> Demonstrations:
    """The demonstrations at ``index``."""
    dynamic = {key: value[index] for key, value in data.dynamic.items()}
    return Demonstrations(dynamic, data.masks[index], data.actions[index], data.returns[index], data.targets[index])


if __name__ == "__main__":
    unknown = [name for name in sys.argv[2:] if name not in CASES]
    if unknown:
        sys.exit(f"unknown case {unknown[0]!r}: one of {', '.join(CASES)}")
    main(Path(sys.argv[1]), sys.argv[2:])
