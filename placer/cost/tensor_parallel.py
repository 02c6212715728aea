"""Tensor parallelism (Megatron-style), inside one server, over ``tp`` devices.

Which ops are split follows Megatron's pairing, propagated over the forward graph in
topological order: a weight matmul whose inputs are all replicated is *column-parallel* (its
output is sharded over the ``tp`` devices); a weight matmul with a sharded input is
*row-parallel* (partial sums, then an **all-reduce of its output**, which is replicated again);
a weight embedding is vocabulary-parallel (all-reduce of its output); any other op is sharded
if an input is, else replicated (layer norms, residual adds). A transformer block so splits
QKV and MLP-up column-wise, attention per head, output and MLP-down row-wise: two
all-reduces in the forward pass; the backward pass mirrors them (two more of the same size).

Per iteration on each of the ``tp`` devices: split ops take ``1/tp`` of their compute,
parameters and activations, replicated ops all of it, and the all-reduces are not overlapped::

    T_tp = sum_split (f + b) / tp + sum_replicated (f + b) + 2 * sum_i AR_tp(S_i)

with ``S_i`` the output bytes of each all-reducing op and ``AR_tp`` the intra-server ring
all-reduce (:mod:`placer.cost.collectives`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Sharding:
    """Per forward op: split by tensor parallelism; bytes all-reduced after it (each pass)."""

    split: np.ndarray  # (n,) bool
    allreduce_bytes: np.ndarray  # (n,) bytes, 0 where nothing is all-reduced


def shard(
    predecessors: list[list[int]],
    weight_matmul: np.ndarray,
    weight_embedding: np.ndarray,
    data: np.ndarray,
    act_bytes: np.ndarray,
) -> Sharding:
    """Propagate Megatron sharding over ops in topological order (module docstring)."""
    n = len(predecessors)
    sharded = np.zeros(n, dtype=bool)
    split = np.zeros(n, dtype=bool)
    allreduce = np.zeros(n)
    for i in range(n):
        any_sharded = any(sharded[j] for j in predecessors[i])
        if data[i]:
            continue
        if weight_matmul[i]:
            split[i] = True
            sharded[i] = not any_sharded
            allreduce[i] = act_bytes[i] if any_sharded else 0.0
        elif weight_embedding[i]:
            split[i] = True
            allreduce[i] = act_bytes[i]
        else:
            sharded[i] = split[i] = any_sharded
    return Sharding(split, allreduce)


def per_device(values: np.ndarray, sharding: Sharding, tp: int) -> np.ndarray:
    """Each device's share of a per-op quantity under ``tp``-way tensor parallelism."""
    return np.where(sharding.split, values / tp, values) if tp > 1 else values
