"""Carry a distil stage's teacher table (members.json) to a recipe whose distil environment differs only in what the
table is pooled over (e.g. the arrival structures, with ``teacher_pooled`` naming ``structure``), so that it is used as
it is instead of tuned again: one variable changed, the teacher held.

    python experiments/placer-recipe/carry_table.py TABLE CONFIG OUT
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from placer.common.atomic import write_atomic
from placer.policies.recipe import load_recipe
from placer.policies.teachers import OBSERVATION_FIELDS, file_sha256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    config = load_recipe(args.config, args.out).distil.config
    settings = config.train
    if "structure" not in settings.teacher_pooled:
        raise SystemExit("the table must be pooled over the structures for it to serve another set of them")
    saved = json.loads(args.table.read_text())
    tuned_for = {
        "env": config.env.model_dump(mode="json", exclude=set(OBSERVATION_FIELDS)),
        "teacher": settings.imitation_teacher,
        "pooled": settings.teacher_pooled,
        "candidates": settings.teacher_candidates,
        "resolved": True,
        "candidate_sha256": file_sha256(Path(str(settings.candidate_policy_file))),
    }
    if saved["tuned_for"]["candidate_sha256"] != tuned_for["candidate_sha256"]:
        raise SystemExit("the table was tuned with another candidate policy file")
    target = args.out / "distil" / "members.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, json.dumps({**saved, "tuned_for": tuned_for, "carried_from": str(args.table)}, indent=1) + "\n")
    print(f"wrote {target}: {len(saved['members'])} regimes")


if __name__ == "__main__":
    main()
