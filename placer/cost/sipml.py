"""The ``sipml`` strategy: PAC-ML's op splitting (kept so that PAC-ML's setting reproduces).

Partitioning (SiP-ML / PAC-ML op splitting). At degree ``d`` every op is split into ``d``
equal shards, shard ``i`` of every op runs on device ``i`` of the placement, so:

- compute: an op of ``t`` reference-seconds takes ``t / (d * s)`` seconds, ``s`` the slowest
  placed device's relative speed (the shards run in lockstep; the slowest sets the pace);
- memory: each device holds ``1/d`` of every op's state, ``(F * param_bytes + activation_bytes) / d``
  summed over forward ops (``F`` = ``param_state_factor``, 4 by default: fp32 weights,
  gradients and two Adam moments);
- communication: a non-``local`` edge of ``S`` bytes is an all-gather of ``S`` split in ``d``
  pieces (every consumer shard needs the whole input). With the placement spanning ``k``
  servers, ``m_min`` and ``m_max`` the fewest and most placed devices on one server::

      T(S) = [k > 1]     * ((k - 1) * L_inter + S * (1 - m_min / d) / B_inter)
           + [m_max > 1] * ((m_max - 1) * L_intra + S * (1 - 1 / d) / B_intra)

  The first term is the inter-server phase through each server's network interface, paced by
  the server that holds the fewest shards and so must receive the most; the second is the
  intra-server phase in which every device collects the whole tensor over its NVLink port. On
  one server it is a ring all-gather; on single-device servers (PAC-ML) the same ring over the
  network. At ``d = 1`` nothing is communicated. ``local`` edges never communicate.

Per-iteration time is the makespan of a list schedule of the partitioned graph: the ``d``
devices run their shards in lockstep, so they act as one machine executing ops one at a time;
an op is ready when each input has arrived (producer's finish + ``T(S)``); when the machine is
free it runs the ready op with the longest compute path to the end (critical-path priority), or
waits for the next arrival. Communication overlaps with compute of other ops; concurrent
transfers of one job do not contend. Jobs never share devices, so jobs do not interfere.

JCT = per-iteration time x iterations. Sequential JCT = sum of op times x iterations
(one reference device, nothing communicated). Op times are used as profiled (no rescaling to
the device type beyond ``speed``), and every op is split, the data-loading ``Input`` op too.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import networkx as nx
import numpy as np

from placer.cluster.topology import Links
from placer.cost.shape import PlacementShape
from placer.graphs.job_graph import JobGraph


@dataclass(frozen=True, eq=False)
class CompiledGraph:
    """A job graph as arrays for the scheduler. ``n`` ops in topological order."""

    compute_s: np.ndarray  # (n,) reference-seconds per op
    tensor_bytes: np.ndarray  # (E,) bytes per edge
    edge_local: np.ndarray  # (E,) bool
    successors: tuple[tuple[tuple[int, int], ...], ...]  # per op: ((successor, edge), ...)
    indegree: tuple[int, ...]
    priority: tuple[float, ...]  # minus the longest compute path from the op to a sink
    state_bytes: float  # F * params + stashed activations, whole job
    sequential_iteration_s: float

    @classmethod
    def build(cls, graph: JobGraph, param_state_factor: float) -> CompiledGraph:
        g = graph.graph
        order = list(nx.lexicographical_topological_sort(g))
        index = {node: i for i, node in enumerate(order)}
        compute = np.array([g.nodes[v]["compute_s"] for v in order], dtype=np.float64)
        successors: list[list[tuple[int, int]]] = [[] for _ in order]
        sizes: list[float] = []
        local: list[bool] = []
        for u in order:
            for v in sorted(g.successors(u), key=index.__getitem__):
                successors[index[u]].append((index[v], len(sizes)))
                sizes.append(g.edges[u, v]["tensor_bytes"])
                local.append(g.edges[u, v].get("local", False))
        path = compute.copy()
        for i in reversed(range(len(order))):
            if successors[i]:
                path[i] += max(path[j] for j, _ in successors[i])
        forward = [d for _, d in g.nodes(data=True) if d["pass"] == "forward"]
        state = sum(param_state_factor * d["param_bytes"] + d["activation_bytes"] for d in forward)
        return cls(
            compute_s=compute,
            tensor_bytes=np.asarray(sizes, dtype=np.float64),
            edge_local=np.asarray(local, dtype=bool),
            successors=tuple(tuple(s) for s in successors),
            indegree=tuple(g.in_degree(v) for v in order),
            priority=tuple(float(-p) for p in path),
            state_bytes=float(state),
            sequential_iteration_s=float(compute.sum()),
        )


def allgather_s(tensor_bytes: np.ndarray | float, shape: PlacementShape, links: Links) -> np.ndarray | float:
    """Seconds to all-gather tensors of ``tensor_bytes`` over a placement (module docstring)."""
    d = shape.degree
    if d == 1:
        return tensor_bytes * 0.0
    fixed, per_byte = 0.0, 0.0
    if shape.servers > 1:
        fixed += (shape.servers - 1) * links.inter_server.latency_s
        per_byte += (1 - shape.min_per_server / d) / links.inter_server.bandwidth_Bps
    if shape.max_per_server > 1:
        fixed += (shape.max_per_server - 1) * links.intra_server.latency_s
        per_byte += (1 - 1 / d) / links.intra_server.bandwidth_Bps
    return fixed + tensor_bytes * per_byte


def iteration_s(g: CompiledGraph, shape: PlacementShape, links: Links) -> float:
    """Makespan of the list schedule of ``g`` split ``shape.degree`` ways (module docstring)."""
    compute = (g.compute_s / (shape.degree * shape.speed)).tolist()
    comm = np.where(g.edge_local, 0.0, allgather_s(g.tensor_bytes, shape, links)).tolist()
    priority, successors = g.priority, g.successors
    indegree = list(g.indegree)
    ready = [0.0] * len(compute)
    pending = [(0.0, priority[v], v) for v, deg in enumerate(indegree) if deg == 0]
    heapq.heapify(pending)
    available: list[tuple[float, int]] = []
    now = 0.0
    while pending or available:
        while pending and pending[0][0] <= now:
            _, prio, v = heapq.heappop(pending)
            heapq.heappush(available, (prio, v))
        if not available:
            now = pending[0][0]
            continue
        _, v = heapq.heappop(available)
        now += compute[v]
        for w, e in successors[v]:
            arrival = now + comm[e]
            if arrival > ready[w]:
                ready[w] = arrival
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(pending, (ready[w], priority[w], w))
    return now
