"""Data parallelism: ``dp`` replicas, each on ``batch / dp`` samples, gradients all-reduced.

Each replica runs the whole model on its share of the global batch (compute and activations
``1/dp``, parameters, gradients and optimizer state whole: ``16`` bytes per parameter with Adam,
fp32 or mixed precision). Gradients are all-reduced in buckets of ``bucket_bytes`` (PyTorch DDP's
25 MB) as the backward pass produces them: with ``K`` buckets of all-reduce time ``a`` each,
ready at ``B k / K`` over a backward pass of ``B`` seconds, the last finishes at::

    max_k (B k / K + (K - k + 1) a) = max(B + a, B / K + K a)

(the expression is linear in ``k``), so the exposed communication is that minus ``B``.
Data loading is each replica's own, on its host, overlapped with compute: the iteration takes
at least ``data_s / dp``.
"""

from __future__ import annotations

import math

BUCKET_BYTES = 25e6


def exposed_sync_s(backward_s: float, gradient_bytes: float, allreduce) -> float:
    """Seconds the gradient all-reduce adds after a backward pass of ``backward_s``.

    ``allreduce(bytes) -> seconds`` is the all-reduce of one bucket over the replicas.
    """
    if gradient_bytes <= 0:
        return 0.0
    buckets = max(1, math.ceil(gradient_bytes / BUCKET_BYTES))
    a = allreduce(gradient_bytes / buckets)
    return max(backward_s + a, backward_s / buckets + buckets * a) - backward_s
