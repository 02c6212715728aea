"""Compare two recordings (record.py's .npz) array by array, or two clones (clone_once.py's .pt) weight by weight; JSON.

python diff.py recordings A.npz B.npz   # {array: equal} for every array both hold
python diff.py clones A.pt B.pt         # the largest absolute difference of the initial and the cloned weights
"""

import json
import sys

import numpy as np
import torch


def recordings(a_path: str, b_path: str) -> dict:
    a, b = np.load(a_path), np.load(b_path)
    same = {k: bool(a[k].shape == b[k].shape and np.array_equal(a[k], b[k])) for k in sorted(set(a.files) & set(b.files))}
    return {"decisions": int(len(a["actions"])), "equal": same, "all_equal": all(same.values())}


def clones(a_path: str, b_path: str) -> dict:
    a, b = torch.load(a_path), torch.load(b_path)
    return {part: max((a[part][k] - b[part][k]).abs().max().item() for k in a[part]) for part in ("init", "after")}


if __name__ == "__main__":
    kind, first, second = sys.argv[1:4]
    print(json.dumps((recordings if kind == "recordings" else clones)(first, second), indent=1))
