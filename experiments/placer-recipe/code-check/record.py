"""Record N decisions of clone.toml's teacher (best with clone.pt's table; seed S; one process) by the code on sys.path
and save every array to an .npz (diff.py compares two).

    PYTHONPATH=/tmp/wtboot:WORKTREE python record.py OUT.npz N S
"""

import json
import sys
import time
from pathlib import Path

import numpy as np

from placer.policies.config import load_train_config
from placer.policies.imitation import collect

ROOT = Path(__file__).resolve().parents[3]


def main(out: str, steps: int, seed: int) -> None:
    config = load_train_config(ROOT / "experiments/configs/clone.toml")
    members = json.loads((ROOT / "experiments/placer-recipe/run-2026-11-26/clone.members.json").read_text())["members"]
    start = time.perf_counter()
    data = collect(config.env, "best", steps, seed, gamma=config.ppo.gamma, members=members, per_episode=config.train.imitation_per_episode)
    print(f"recorded {len(data.actions)} decisions in {time.perf_counter() - start:.1f} s")
    arrays = {"actions": data.actions, "masks": data.masks, "returns": data.returns}
    np.savez(out, **arrays, **{f"obs_{k}": v for k, v in data.dynamic.items()})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
