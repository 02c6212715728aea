"""A job graph as per-forward-op arrays on one device type, in one precision.

Forward ops are taken in (lexicographic) topological order, positions ``0..n-1``; op ``x``'s
backward time is that of its mirror ``bw:x`` (:mod:`placer.graphs.backward`); a backward op without a
mirror counts towards the last forward op. Op kinds, from the op's name:

- ``data``: a source op named ``Input*`` (PipeDream profiled data loading into it). It is host
  work: not run on the GPU, not rescaled to the device, never split by tensor parallelism;
  each data-parallel replica loads its own share of the batch, overlapped with GPU compute.
- ``matmul``: convolutions, linear layers, LSTMs, batched matmuls and attention; time scales
  with the device's sustained matmul FLOP/s in the precision (:mod:`placer.cluster.devices`).
- ``memory``: everything else (norms, activations, pooling, elementwise); time scales with
  memory bandwidth and bytes per element.

Rescaling from ``graph.profiled_on`` to the placed device: ``t' = t * rate_profiled / rate_placed``
per kind; activation and tensor bytes scale with the bytes per element of the training precision.
A graph without ``profiled_on``, or a device without a model, takes times as they are divided by
the device's ``speed``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx
import numpy as np

from placer.cluster.devices import BYTES_PER_ELEMENT, DeviceModel, device_model
from placer.cost.tensor_parallel import Sharding, shard
from placer.graphs.job_graph import JobGraph

_MATMUL = re.compile(
    r"^(Conv|Linear|LSTM|EmuBidirLSTM|RecurrentAttention|Classifier|"
    r"aten\.(mm|addmm|bmm|baddbmm|matmul|linear|conv[123]d|conv_transpose[123]d|convolution|_convolution|"
    r"_scaled_dot_product|scaled_dot_product))"
)
_EMBEDDING = re.compile(r"(?i)embedding")


def op_kind(name: str, is_source: bool) -> str:
    """``data``, ``matmul`` or ``memory`` for an op of this name (module docstring)."""
    if is_source and name.startswith("Input"):
        return "data"
    return "matmul" if _MATMUL.match(name) else "memory"


@dataclass(frozen=True, eq=False)
class GraphProfile:
    """Per forward op (``n``), at the graph's global batch, on one device type and precision.

    fw_s, bw_s: GPU seconds (0 for the data op); param_bytes: fp32 parameter bytes;
    act_bytes: stashed activation bytes; cut_bytes (n - 1,): bytes of the forward edges that
    cross the cut after each position; data_s: host data-loading seconds per iteration;
    sharding: what tensor parallelism splits and all-reduces; is_matmul: matmul-class ops.
    """

    fw_s: np.ndarray
    bw_s: np.ndarray
    param_bytes: np.ndarray
    act_bytes: np.ndarray
    cut_bytes: np.ndarray
    data_s: float
    sharding: Sharding
    is_matmul: np.ndarray  # (n,) bool: matmul-class ops (their time scales with a device's compute_scale)
    batch_size: int | None
    precision: str
    key: tuple = ()  # (graph key, device, speed): what it was built from

    @property
    def num_ops(self) -> int:
        return len(self.fw_s)

    @property
    def grad_bytes_per_param_byte(self) -> float:
        """Gradient bytes all-reduced per fp32 parameter byte (16-bit gradients in bf16/fp16)."""
        return BYTES_PER_ELEMENT[self.precision] / 4

    @classmethod
    def build(cls, graph: JobGraph, device: str | None, speed: float, key: tuple = ()) -> GraphProfile:
        g = graph.graph
        forward = nx.lexicographical_topological_sort(g.subgraph(v for v, d in g.nodes(data=True) if d["pass"] == "forward"))
        order = list(forward)
        index = {v: i for i, v in enumerate(order)}
        n = len(order)
        kinds = [op_kind(g.nodes[v]["name"], g.in_degree(v) == 0) for v in order]
        fw = np.array([g.nodes[v]["compute_s"] for v in order], dtype=np.float64)
        bw = np.zeros(n)
        for v, d in g.nodes(data=True):
            if d["pass"] == "backward":
                mirror = "fw:" + v[3:] if v.startswith("bw:") else None
                bw[index.get(mirror, n - 1)] += d["compute_s"]
        matmul_factor, memory_factor, bytes_factor, precision = _rescaling(graph, device, speed)
        is_data = np.array([k == "data" for k in kinds])
        is_matmul = np.array([k == "matmul" for k in kinds])
        factor = np.where(is_matmul, matmul_factor, memory_factor)
        data_s = float(fw[is_data].sum() + bw[is_data].sum())
        fw = np.where(is_data, 0.0, fw * factor)
        bw = np.where(is_data, 0.0, bw * factor)
        params = np.array([g.nodes[v]["param_bytes"] for v in order], dtype=np.float64)
        acts = np.array([g.nodes[v]["activation_bytes"] for v in order], dtype=np.float64) * bytes_factor
        crossing = np.zeros(n + 1)
        predecessors: list[list[int]] = [[] for _ in order]
        for u, v, d in g.edges(data=True):
            if u in index and v in index:
                crossing[index[u] + 1] += d["tensor_bytes"] * bytes_factor
                crossing[index[v] + 1] -= d["tensor_bytes"] * bytes_factor
                predecessors[index[v]].append(index[u])
        names = [g.nodes[v]["name"] for v in order]
        sharding = shard(
            predecessors,
            is_matmul & (params > 0),
            np.array([bool(_EMBEDDING.search(name)) for name in names]) & (params > 0),
            is_data,
            acts,
        )
        return cls(
            fw_s=fw,
            bw_s=bw,
            param_bytes=params,
            act_bytes=acts,
            cut_bytes=np.cumsum(crossing)[1:n],
            data_s=data_s,
            sharding=sharding,
            is_matmul=is_matmul,
            batch_size=graph.batch_size,
            precision=precision,
            key=key or (graph.key, device, speed),
        )


def _rescaling(graph: JobGraph, device: str | None, speed: float) -> tuple[float, float, float, str]:
    """(matmul time factor, memory time factor, bytes factor, training precision)."""
    precision = graph.precision or "fp32"
    if graph.profiled_on is None or device is None:
        return 1.0 / speed, 1.0 / speed, 1.0, precision
    source_name, profiled_precision = graph.profiled_on
    source: DeviceModel = device_model(source_name)
    target = device_model(device)
    run_precision = target.effective_precision(precision)
    return (
        source.matmul_rate(profiled_precision) / target.matmul_rate(run_precision),
        source.memory_rate(profiled_precision) / target.memory_rate(run_precision),
        BYTES_PER_ELEMENT[run_precision] / BYTES_PER_ELEMENT[profiled_precision],
        run_precision,
    )
