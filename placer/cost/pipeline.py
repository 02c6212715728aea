"""Pipeline parallelism: contiguous stages balanced over the graph, 1F1B schedule.

The forward ops (topological order) are cut into ``p`` contiguous stages minimising the
slowest stage's compute (binary search on the bottleneck, greedy cuts); each stage's backward
ops go with it. The batch is split into ``m`` micro-batches. With ``f_j``, ``b_j`` the forward
and backward time of one micro-batch on stage ``j`` (compute, tensor-parallel all-reduces, and
the activation or gradient sent to the neighbour stage), the 1F1B (PipeDream-flush) schedule takes::

    T_pp = (m - 1) * max_j (f_j + b_j) + sum_j (f_j + b_j)

which for equal stages ``t`` is ``(m + p - 1) t``: the bubble is ``(p - 1) / (m + p - 1)``.
Memory: stage ``j`` stashes activations of ``min(m, p - j)`` micro-batches in flight. With
``recompute`` (GPipe-style activation checkpointing, as torchgpipe) each backward re-runs its
forward and only the stage's input is stashed per micro-batch, plus one micro-batch's activations.
"""

from __future__ import annotations

import numpy as np


def balanced_stages(weights: np.ndarray, p: int) -> list[int]:
    """Start positions of ``p`` contiguous non-empty stages (plus ``len(weights)``) that minimise the heaviest stage."""
    n = len(weights)
    if not 1 <= p <= n:
        raise ValueError(f"cannot cut {n} ops into {p} stages")
    prefix = np.concatenate([[0.0], np.cumsum(weights)])

    def cuts(limit: float) -> list[int] | None:
        starts = [0]
        for stage in range(1, p):
            reach = int(np.searchsorted(prefix, prefix[starts[-1]] + limit * (1 + 1e-12), side="right")) - 1
            starts.append(min(max(reach, starts[-1] + 1), n - (p - stage)))
        return starts + [n] if prefix[n] - prefix[starts[-1]] <= limit * (1 + 1e-12) else None

    lo, hi = float(np.max(weights, initial=0.0)), float(prefix[n])
    best = cuts(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        found = cuts(mid)
        if found is None:
            lo = mid
        else:
            hi, best = mid, found
        if hi - lo <= 1e-9 * max(hi, 1e-30):
            break
    assert best is not None
    return best


def one_f_one_b_s(forward_s: np.ndarray, backward_s: np.ndarray, micro_batches: int) -> float:
    """Seconds of a 1F1B pipeline, per-micro-batch stage times ``forward_s``/``backward_s`` (p,)."""
    per_stage = forward_s + backward_s
    return float((micro_batches - 1) * per_stage.max() + per_stage.sum())
