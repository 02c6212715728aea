"""Per-stage sums of a profile under a ``dp x tp x pp`` split, and the split enumeration (:mod:`placer.cost.model`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placer.cost.data_parallel import Buckets, buckets
from placer.cost.pipeline import balanced_stages
from placer.cost.profile import GraphProfile
from placer.cost.tensor_parallel import per_device


@dataclass(frozen=True, eq=False)
class Stages:
    """Each of ``pp`` balanced stages under ``tp``-way tensor parallelism, for one replica at the whole batch."""

    forward_s: list[float]
    backward_s: list[float]
    forward_matmul_s: list[float]  # the matmul-class part of forward_s
    backward_matmul_s: list[float]
    param_bytes: list[float]
    activation_bytes: list[float]
    allreduces: list[float]  # tensor-parallel all-reduces per pass
    allreduce_bytes: list[float]
    cut_out_bytes: list[float]  # (pp - 1) bytes sent from stage j to j + 1
    cut_in_bytes: list[float]  # (pp) bytes a stage receives (0 for the first)
    buckets: list[Buckets]  # each stage's DDP gradient buckets (placer.cost.data_parallel)

    @classmethod
    def build(cls, profile: GraphProfile, tp: int, pp: int) -> Stages:
        sharding = profile.sharding
        fw, bw = per_device(profile.fw_s, sharding, tp), per_device(profile.bw_s, sharding, tp)
        starts = balanced_stages(fw + bw, pp) if pp > 1 else [0, profile.num_ops]
        bounds = np.asarray(starts[:-1])

        def per_stage(values: np.ndarray) -> list[float]:
            return (np.add.reduceat(values, bounds) if len(values) else np.zeros(pp)).tolist()

        ar = sharding.allreduce_bytes
        params = per_device(profile.param_bytes, sharding, tp)
        grads = params * profile.grad_bytes_per_param_byte
        cut_out = profile.cut_bytes[np.asarray(starts[1:-1], dtype=np.int64) - 1] if pp > 1 else np.zeros(0)
        return cls(
            forward_s=per_stage(fw),
            backward_s=per_stage(bw),
            forward_matmul_s=per_stage(np.where(profile.is_matmul, fw, 0.0)),
            backward_matmul_s=per_stage(np.where(profile.is_matmul, bw, 0.0)),
            param_bytes=per_stage(params),
            activation_bytes=per_stage(per_device(profile.act_bytes, sharding, tp)),
            allreduces=per_stage((ar > 0).astype(float)),
            allreduce_bytes=per_stage(ar),
            cut_out_bytes=cut_out.tolist(),
            cut_in_bytes=[0.0, *cut_out.tolist()],
            buckets=[buckets(bw[a:b], grads[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)],
        )


def factorisations(degree: int, mode: str) -> list[tuple[int, int, int]]:
    if mode == "dp":
        return [(degree, 1, 1)]
    if mode == "tp":
        return [(1, degree, 1)]
    if mode == "pp":
        return [(1, 1, degree)]
    out = []
    for tp in range(1, degree + 1):
        if degree % tp:
            continue
        for pp in range(1, degree // tp + 1):
            if (degree // tp) % pp == 0:
                out.append((degree // (tp * pp), tp, pp))
    return out


def tp_inside_servers(server_of: list[int], tp: int) -> bool:
    """Every group of ``tp`` consecutive ranks lies on one server."""
    return tp == 1 or all(server_of[g] == server_of[g + tp - 1] for g in range(0, len(server_of), tp))


def one_f_one_b(forward_s: list[float], backward_s: list[float], micro_batches: int) -> float:
    """:func:`placer.cost.pipeline.one_f_one_b_s` on plain lists."""
    per_stage = [f + b for f, b in zip(forward_s, backward_s, strict=True)]
    return (micro_batches - 1) * max(per_stage) + sum(per_stage)
