"""Tiny hand-built graphs and clusters whose answers are worked out by hand in the tests."""

from __future__ import annotations

import networkx as nx

from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.graphs.job_graph import JobGraph


def op(compute_s: float, param_bytes: float = 0.0, activation_bytes: float = 0.0, pass_: str = "forward") -> dict:
    return {"name": "op", "pass": pass_, "compute_s": compute_s, "param_bytes": param_bytes, "activation_bytes": activation_bytes}


def toy_graph(nodes: dict[str, dict], edges: dict[tuple[str, str], float], *, name: str = "toy", iterations: int = 1) -> JobGraph:
    g = nx.DiGraph()
    for node, attrs in nodes.items():
        g.add_node(node, **attrs)
    for (u, v), size in edges.items():
        g.add_edge(u, v, tensor_bytes=size, local=False)
    return JobGraph(g, name=name, iterations=iterations)


def chain() -> JobGraph:
    """a (2 s) -> b (4 s), the edge carries 8e9 bytes."""
    return toy_graph({"a": op(2.0), "b": op(4.0)}, {("a", "b"): 8e9})


def equal_sum_paths() -> tuple[JobGraph, JobGraph]:
    """a->b->c->d and b->a->d->c over four ops of different lengths (1 MB per edge): different graphs whose
    observation arrays have equal sums, position-weighted ones included."""
    nodes = {v: op(1e-3 * (1 + i)) for i, v in enumerate("abcd")}
    return tuple(toy_graph(nodes, {(u, v): 1e6 for u, v in zip(order, order[1:], strict=False)}, name=order) for order in ("abcd", "badc"))


def toy_cluster(servers: int, per_server: int, *, intra=(8e9, 0.0), inter=(4e9, 0.0), memory=80e9, speed=1.0) -> Cluster:
    return Cluster(
        parse_cluster_spec(
            {
                "name": f"toy{servers}x{per_server}",
                "device_types": {"gpu": {"memory_bytes": memory, "speed": speed}},
                "servers": [{"count": servers, "devices_per_server": per_server, "device_type": "gpu"}],
                "links": {
                    "intra_server": {"bandwidth_Bps": intra[0], "latency_s": intra[1]},
                    "inter_server": {"bandwidth_Bps": inter[0], "latency_s": inter[1]},
                },
            }
        )
    )
