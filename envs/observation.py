"""Observations: a padded ``Dict`` of the job graph, the job, the choices and the cluster.

The graph part holds the job's forward ops only; each forward op carries its mirrored
backward op's costs as features (the backward graph is the forward graph reversed). Keys,
shapes (``N`` = max_nodes, ``E`` = max_edges, ``O`` = max_degree x rules, ``M`` = max_devices)
and features, all float32 unless said:

- ``nodes`` (N, 8): forward and backward compute as fractions of the job's total;
  log10(1 + forward ms) / 3, log10(1 + backward ms) / 3; log10(1 + parameter bytes) / 10,
  log10(1 + activation bytes) / 10; in-degree / 4, out-degree / 4.
- ``node_mask`` (N,): 1 for real ops, 0 for padding.
- ``edge_index`` (2, E) int64: forward edges (source, target) as node positions; padding is 0.
- ``edges`` (E, 1): log10(1 + tensor bytes) / 10. ``edge_mask`` (E,).
- ``job`` (6,): beta; log10(sequential JCT s) / 5; log10(memory at degree 1 / smallest device
  memory) / 2; forward ops / 1000; log10(sequential iteration s) / 2; iterations / 10,000.
- ``options`` (O, 9) per (degree, rule), degree-major: feasible (0/1); min(JCT / deadline, 4) / 4;
  min(device-seconds / sequential JCT, 4) / 4; servers spanned / degree; degree / max_degree;
  devices left free after placing / devices; the cost model's strategy as log2(dp) / 4,
  log2(tp) / 4, log2(pp) / 4 (all 0 for ``sipml``). An option without free devices reads
  (0, 1, 1, 0, degree / max_degree, 0, 0, 0, 0).
- ``devices`` (M, 4): free (0/1); min(seconds until free / deadline, 4) / 4; memory / 80 GB;
  relative speed. ``device_mask`` (M,).
- ``cluster`` (3,): fraction of devices free; fraction of servers wholly free; running jobs / devices.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from placer.errors import PlacerError
from placer.graph import JobGraph
from placer.options import Option
from placer.simulator import ClusterView
from placer.types import Job

NODE_FEATURES, EDGE_FEATURES, JOB_FEATURES, OPTION_FEATURES, DEVICE_FEATURES, CLUSTER_FEATURES = 8, 1, 6, 9, 4, 3
REFERENCE_MEMORY_BYTES = 80e9


class GraphTooLargeError(PlacerError):
    """A job graph or cluster exceeds the observation's padding limits."""


def observation_space(max_nodes: int, max_edges: int, num_options: int, max_devices: int) -> spaces.Dict:
    def box(*shape, low=0.0, high=1.0):
        return spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)

    return spaces.Dict(
        {
            "nodes": box(max_nodes, NODE_FEATURES, high=4.0),
            "node_mask": box(max_nodes),
            "edge_index": spaces.Box(0, max_nodes - 1, shape=(2, max_edges), dtype=np.int64),
            "edges": box(max_edges, EDGE_FEATURES, high=4.0),
            "edge_mask": box(max_edges),
            "job": box(JOB_FEATURES, low=-4.0, high=4.0),
            "options": box(num_options, OPTION_FEATURES),
            "devices": box(max_devices, DEVICE_FEATURES, high=4.0),
            "device_mask": box(max_devices),
            "cluster": box(CLUSTER_FEATURES),
        }
    )


def forward_size(graph: JobGraph) -> tuple[int, int]:
    """(forward ops, forward edges) of ``graph``: the padding it needs."""
    g = graph.graph
    forward = {v for v, d in g.nodes(data=True) if d["pass"] == "forward"}
    return len(forward), sum(1 for u, v in g.edges if u in forward and v in forward)


def graph_arrays(graph: JobGraph, max_nodes: int, max_edges: int) -> dict[str, np.ndarray]:
    """The static, padded graph part of the observation for ``graph``."""
    g = graph.graph
    forward = sorted(v for v, d in g.nodes(data=True) if d["pass"] == "forward")
    position = {v: i for i, v in enumerate(forward)}
    edges = sorted((position[u], position[v], d["tensor_bytes"]) for u, v, d in g.edges(data=True) if u in position and v in position)
    if len(forward) > max_nodes or len(edges) > max_edges:
        raise GraphTooLargeError(
            f"graph {graph.name!r} has {len(forward)} forward ops and {len(edges)} forward edges; the observation holds at most "
            f"{max_nodes} and {max_edges} (raise max_nodes / max_edges)"
        )
    total = max(graph.sequential_iteration_s, 1e-12)
    nodes = np.zeros((max_nodes, NODE_FEATURES), dtype=np.float32)
    for v, i in position.items():
        fw = g.nodes[v]
        bw = g.nodes.get("bw:" + v[3:], {"compute_s": 0.0}) if v.startswith("fw:") else {"compute_s": 0.0}
        nodes[i] = (
            fw["compute_s"] / total,
            bw["compute_s"] / total,
            math.log10(1 + fw["compute_s"] * 1e3) / 3,
            math.log10(1 + bw["compute_s"] * 1e3) / 3,
            math.log10(1 + fw["param_bytes"]) / 10,
            math.log10(1 + fw["activation_bytes"]) / 10,
            0.0,
            0.0,
        )
    edge_index = np.zeros((2, max_edges), dtype=np.int64)
    edge_feats = np.zeros((max_edges, EDGE_FEATURES), dtype=np.float32)
    for k, (u, v, size) in enumerate(edges):
        edge_index[:, k] = (u, v)
        edge_feats[k, 0] = math.log10(1 + size) / 10
        nodes[v, 6] += 0.25
        nodes[u, 7] += 0.25
    np.clip(nodes, 0.0, 4.0, out=nodes)
    node_mask = np.zeros(max_nodes, dtype=np.float32)
    node_mask[: len(forward)] = 1
    edge_mask = np.zeros(max_edges, dtype=np.float32)
    edge_mask[: len(edges)] = 1
    return {
        "nodes": nodes,
        "node_mask": node_mask,
        "edge_index": edge_index,
        "edges": edge_feats,
        "edge_mask": edge_mask,
        "num_forward_ops": len(forward),
    }


def dynamic_arrays(
    job: Job, view: ClusterView, table: list[Option], max_degree: int, max_devices: int, num_forward_ops: int
) -> dict[str, np.ndarray]:
    """The per-decision part: job, options, devices and cluster features."""
    cluster, cost = view.cluster, view.cost
    if cluster.num_devices > max_devices:
        raise GraphTooLargeError(f"cluster {cluster.name!r} has {cluster.num_devices} devices; the observation holds at most {max_devices}")
    seq = job.sequential_jct_s
    memory_ratio = cost.memory_per_device(job.graph, 1) / cluster.memory_bytes.min()
    job_feats = np.array(
        [
            job.beta,
            math.log10(max(seq, 1e-6)) / 5,
            math.log10(max(memory_ratio, 1e-4)) / 2,
            num_forward_ops / 1000,
            math.log10(max(job.graph.sequential_iteration_s, 1e-6)) / 2,
            job.iterations / 1e4,
        ],
        dtype=np.float32,
    )
    options = np.zeros((len(table), OPTION_FEATURES), dtype=np.float32)
    for i, o in enumerate(table):
        if o.devices is None or o.jct_s is None:
            options[i] = (0.0, 1.0, 1.0, 0.0, o.degree / max_degree, 0.0, 0.0, 0.0, 0.0)
            continue
        s = o.strategy
        split = (0.0, 0.0, 0.0) if s is None or s.sipml else (math.log2(s.dp) / 4, math.log2(s.tp) / 4, math.log2(s.pp) / 4)
        servers = len(set(cluster.server_of[list(o.devices)].tolist()))
        options[i] = (
            float(o.feasible),
            min(o.jct_s / job.deadline_s, 4) / 4,
            min(o.device_seconds / seq, 4) / 4,
            servers / o.degree,
            o.degree / max_degree,
            (view.num_free - o.degree) / cluster.num_devices,
            *split,
        )
    devices = np.zeros((max_devices, DEVICE_FEATURES), dtype=np.float32)
    n = cluster.num_devices
    devices[:n, 0] = view.free
    devices[:n, 1] = np.minimum((view.free_at - view.now) / job.deadline_s, 4) / 4
    devices[:n, 2] = cluster.memory_bytes / REFERENCE_MEMORY_BYTES
    devices[:n, 3] = cluster.speed
    np.clip(devices, 0.0, 4.0, out=devices)
    device_mask = np.zeros(max_devices, dtype=np.float32)
    device_mask[:n] = 1
    whole = sum(all(view.free[d] for d in devs) for devs in cluster.devices_of_server)
    cluster_feats = np.array([view.num_free / n, whole / cluster.num_servers, min(view.running / n, 1.0)], dtype=np.float32)
    return {"job": np.clip(job_feats, -4, 4), "options": options, "devices": devices, "device_mask": device_mask, "cluster": cluster_feats}
