"""Data parallelism: ``dp`` replicas, each on ``batch / dp`` samples, gradients all-reduced in buckets.

Each replica runs the whole model on its share of the global batch (compute and activations
``1/dp``, parameters, gradients and optimizer state whole: ``16`` bytes per parameter with Adam,
fp32 or mixed precision). Gradients are all-reduced as PyTorch DDP does it (Li et al., "PyTorch
Distributed", VLDB 2020): parameters are assigned to buckets in reverse order (the order the backward
pass produces their gradients), the first bucket closing at :data:`FIRST_BUCKET_BYTES` (1 MiB), the
others at :data:`BUCKET_BYTES` (25 MB, ``bucket_cap_mb``); a bucket is all-reduced once its last
gradient exists, one bucket at a time, in order, on NCCL's own stream. With bucket ``k`` ready at
``r_k B`` of a backward pass of ``B`` seconds and all-reduced in ``a_k``::

    end_0 = 0,  end_k = max(end_{k-1}, r_k B) + a_k,  E = end_K - B      (bucket-order overlap)

``E`` is the least the communication can add: everything not waiting on a gradient hides behind
compute. Real stacks hide less (all-reduce kernels and TCP's copies contend with compute for SMs,
PCIe and host memory); as Pollux (Qiao et al., OSDI 2021) fits how far synchronisation overlaps
compute per job, the exposed time is interpolated with a fitted ``overlap`` in [0, 1]::

    exposed = overlap * E + (1 - overlap) * sum_k a_k

(1: as far as bucket order allows, the default; 0: nothing hidden).

Bucket order and the overlap are opt-in (a cluster file with a link ``kind`` or a ``[communication]``
table, docs/clusters.md). Without them the gradients are priced as before those terms existed
(:func:`even_buckets_exposed_s`): ``K = ceil(G / 25 MB)`` equal buckets ready at ``B k / K``, all-reduced
in ``a`` each, the last finishing at ``max_k (B k / K + (K - k + 1) a) = max(B + a, B / K + K a)``
(linear in ``k``), exposed ``max(B + a, B / K + K a) - B``.

Data loading is each replica's own, on its host, overlapped with compute: the iteration takes at
least ``data_s / dp``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BUCKET_BYTES = 25e6  # torch DistributedDataParallel(bucket_cap_mb=25)
FIRST_BUCKET_BYTES = 1024**2  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


@dataclass(frozen=True)
class Buckets:
    """One stage's gradient buckets in all-reduce order: ``ready`` (fraction of its backward pass done when the
    bucket's last gradient exists, 0-1) and ``nbytes`` (gradient bytes per replica, at the whole batch: unchanged by ``dp``)."""

    ready: tuple[float, ...]
    nbytes: tuple[float, ...]


def buckets(backward_s: np.ndarray, grad_bytes: np.ndarray) -> Buckets:
    """DDP's buckets (module docstring) of ops with backward seconds ``backward_s`` and gradient bytes ``grad_bytes``,
    both (n,) in forward order; an op's gradients all land in one bucket."""
    total = float(backward_s.sum())
    done = np.cumsum(backward_s[::-1])
    ready: list[float] = []
    sizes: list[float] = []
    filled, cap = 0.0, float(FIRST_BUCKET_BYTES)
    for i, nbytes in enumerate(grad_bytes[::-1].tolist()):
        if nbytes <= 0:
            continue
        filled += nbytes
        if filled >= cap:
            ready.append(float(done[i]) / total if total > 0 else 1.0)
            sizes.append(filled)
            filled, cap = 0.0, BUCKET_BYTES
    if filled > 0:
        ready.append(1.0)
        sizes.append(filled)
    return Buckets(tuple(ready), tuple(sizes))


def bucket_order_exposed_s(backward_s: float, plan: Buckets, fixed_s: float, per_byte_s: float, overlap: float = 1.0) -> float:
    """Seconds the gradient all-reduce adds after a backward pass of ``backward_s`` (module docstring).

    One bucket's all-reduce takes ``fixed_s + per_byte_s * bytes`` (latency steps and bandwidth; the bytes are
    those of :class:`Buckets`, so ``per_byte_s`` carries any ``1 / micro-batch`` scaling the caller wants: none).
    """
    end = total = 0.0
    for ready, nbytes in zip(plan.ready, plan.nbytes, strict=True):
        a = fixed_s + per_byte_s * nbytes
        end = max(end, ready * backward_s) + a
        total += a
    return overlap * max(end - backward_s, 0.0) + (1.0 - overlap) * total


def even_buckets_exposed_s(backward_s: float, gradient_bytes: float, allreduce) -> float:
    """Seconds the gradient all-reduce adds after a backward pass of ``backward_s``, in even buckets (module docstring:
    a cluster that does not opt into bucket order). ``allreduce(bytes) -> seconds`` is one bucket's all-reduce."""
    if gradient_bytes <= 0:
        return 0.0
    buckets = max(1, math.ceil(gradient_bytes / BUCKET_BYTES))
    a = allreduce(gradient_bytes / buckets)
    return max(backward_s + a, backward_s / buckets + buckets * a) - backward_s
