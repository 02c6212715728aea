"""Build clone.toml's network as train() does (seed 0), clone it one epoch on the first N decisions of a recording that
train() kept (RECORDED = a run's recorded/warm.npz), and save the initial and the cloned weights (diff.py compares two).
NT: torch's threads (default 2); DET=1: torch's deterministic kernels.

    NT=2 [DET=1] PYTHONPATH=/tmp/wtboot:WORKTREE python clone_once.py OUT.pt N RECORDED
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(int(os.environ.get("NT", "2")))
if os.environ.get("DET"):
    torch.use_deterministic_algorithms(True)

import placer.policies.imitation as imitation  # noqa: E402  (after torch's settings)
from placer.policies.config import load_train_config  # noqa: E402
from placer.policies.train import build_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def main(out: str, n: int, recorded: str) -> None:
    config = load_train_config(ROOT / "experiments/configs/clone.toml")
    model = build_model(config, Path(tempfile.mkdtemp()))
    init = {k: v.detach().clone() for k, v in model.policy.state_dict().items()}
    kept = np.load(recorded)
    dynamic = {k.removeprefix("dynamic."): kept[k][:n] for k in kept.files if k.startswith("dynamic.")}
    demonstrations = getattr(imitation, "Demonstrations", None)  # where the code of 51e4dbc kept it
    if demonstrations is None:
        from placer.policies.demonstrations import Demonstrations as demonstrations
    data = demonstrations(dynamic, kept["masks"][:n], kept["actions"][:n], kept["returns"][:n], kept["targets"][:n])
    start = time.perf_counter()
    accuracy = imitation.clone(model.policy, data, epochs=1, batch_size=256, learning_rate=1e-3, seed=0)
    print(f"accuracy {accuracy:.4f}, cloned in {time.perf_counter() - start:.2f} s")
    torch.save({"init": init, "after": {k: v.detach().clone() for k, v in model.policy.state_dict().items()}}, out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
