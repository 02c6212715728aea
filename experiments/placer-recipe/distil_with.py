"""Run a recipe's distil stage again with another candidate teacher in the same cells: the stage's resolved config
(``OUT/distil/config.json`` of a finished run) with ``candidate_policy_file`` replaced, and its teacher table
(``members.json``) carried over with the new file's digest, so the candidate teaches exactly the cells it taught before.

    python experiments/placer-recipe/distil_with.py RUN CANDIDATE NEW_OUT [--seed N]

Everything else (env, advisers, recording, cloning, DAgger, and the seed unless ``--seed`` names another) is the run's;
the new stage's folder is ``NEW_OUT``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from placer.common.atomic import write_atomic
from placer.policies.config import TrainConfig
from placer.policies.teachers import file_sha256
from placer.policies.train import train
from placer.policies.validation import RatesCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a finished recipe run's folder (its distil/ is read)")
    parser.add_argument("candidate", type=Path, help="the policy file that teaches the candidate's cells instead")
    parser.add_argument("out", type=Path, help="the new distil stage's folder")
    parser.add_argument("--seed", type=int, default=None, help="the stage's seed (recorded episodes, cloning, DAgger); default: the run's")
    args = parser.parse_args()
    stage = args.run / "distil"
    config = TrainConfig.model_validate_json((stage / "config.json").read_text())
    changes = {"candidate_policy_file": str(args.candidate)} | ({} if args.seed is None else {"seed": args.seed})
    config = config.model_copy(update={"train": config.train.model_copy(update=changes)})
    table = json.loads((stage / "members.json").read_text())
    table["tuned_for"]["candidate_sha256"] = file_sha256(args.candidate)
    table["carried_from"] = f"{stage / 'members.json'} (candidate {config.train.candidate_policy_file} in the same cells)"
    args.out.mkdir(parents=True, exist_ok=True)
    if not (args.out / "members.json").exists():
        write_atomic(args.out / "members.json", json.dumps(table, indent=1) + "\n")
    train(config, args.out, resume=True, progress=True, report=print, cache=RatesCache(args.run / "rates.json"))  # rates kept by content


if __name__ == "__main__":
    main()
