"""A short RL stage from the recipe's clone, to see what a change to PPO's settings does before a full run.

    python experiments/placer-recipe/rl_probe.py RUN NAME STEPS [--structure S,S] [--ppo JSON]

RUN is a recipe folder whose ``rl-seed1`` stage has started (its ``config.json`` and ``members.json`` are read: the
clone it starts from, the teacher's table). The stage's config is run for STEPS PPO steps into ``RUN/probe-NAME`` with
no validation (``eval_every`` off) and no closing paired validation; ``--structure`` keeps only those stream structures
(and their rows of the teacher's table); ``--ppo`` overrides ``[ppo]`` keys (e.g. '{"vf_coef": 0.05}'). Judge the probe's
``last.pt`` with ``placer evaluate`` on streams apart (the README's commands).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import placer.policies.train as training
from placer.policies.config import TrainConfig


class _Done(Exception):
    """PPO finished: the probe skips the stage's closing paired validation."""


def _stop(*args, **kwargs):
    raise _Done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("name")
    parser.add_argument("steps", type=int)
    parser.add_argument("--structure", default=None, help="comma-separated stream structures to keep")
    parser.add_argument("--ppo", default="{}", help="[ppo] overrides as JSON")
    args = parser.parse_args()
    stage = args.run / "rl-seed1"
    config = json.loads((stage / "config.json").read_text())
    table = json.loads((stage / "members.json").read_text())["members"]
    if args.structure:
        keep = args.structure.split(",")
        config["env"]["workload"]["structure"] = keep
        table = {key: member for key, member in table.items() if key.rsplit("|", 1)[1] in keep}
    config["ppo"].update(json.loads(args.ppo))
    config["train"].update(timesteps=args.steps, eval_every=10**9, checkpoint_every=10**9, validate_start=False)
    out = args.run / f"probe-{args.name}"
    shutil.rmtree(out, ignore_errors=True)
    training.teacher_members = lambda *a, **k: table  # the stage's own table (read, not tuned again)
    training.TrainingCallback.evaluate = lambda self: 0.0  # no validation during PPO
    training.paired_summary = _stop
    try:
        training.train(TrainConfig.model_validate(config), out, progress=True)
    except _Done:
        print(f"wrote {out / 'last.pt'}")


if __name__ == "__main__":
    main()
