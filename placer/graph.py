"""Job graphs: an immutable DAG of training ops with their costs.

A :class:`JobGraph` holds one training iteration of a DNN job:

- nodes (ops), keyed by string id, with attributes
  ``name`` (str, op description), ``pass`` (``"forward"`` or ``"backward"``),
  ``compute_s`` (float >= 0, seconds per iteration on the reference device),
  ``param_bytes`` (float >= 0, parameter bytes owned by the op),
  ``activation_bytes`` (float >= 0, bytes of the op's output tensor) and optionally
  ``flops`` (float >= 0, FLOPs per iteration);
- edges with ``tensor_bytes`` (float >= 0, bytes sent from producer to consumer) and
  ``local`` (bool: the consumer reads the producer's shard on the same device, as a
  backward op reads its own forward op's stashed activations, so it never communicates).

Job-level fields: ``name`` and ``iterations`` (training iterations of a job by default).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from placer.errors import GraphValidationError

SCHEMA = "placer.job_graph"
SCHEMA_VERSION = 1
NODE_COST_FIELDS = ("compute_s", "param_bytes", "activation_bytes")
PASSES = ("forward", "backward")


class JobGraph:
    """An immutable, validated job graph. Build with :meth:`from_networkx` or load JSON."""

    __slots__ = ("_graph", "_name", "_iterations", "_key")

    def __init__(self, graph: nx.DiGraph, *, name: str, iterations: int = 1000, _owned: bool = False) -> None:
        if not isinstance(name, str) or not name:
            raise GraphValidationError("job graph name must be a non-empty string")
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise GraphValidationError(f"graph {name!r}: iterations must be an integer >= 1, got {iterations!r}")
        frozen = nx.freeze(graph if _owned else graph.copy())  # _owned: built here, nobody else holds it
        _validate(frozen, name)
        self._graph = frozen
        self._name = name
        self._iterations = iterations
        self._key: str | None = None

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, *, name: str, iterations: int = 1000) -> JobGraph:
        """Validate and copy ``graph``; later changes to ``graph`` do not affect the result."""
        return cls(graph, name=name, iterations=iterations)

    @property
    def graph(self) -> nx.DiGraph:
        """The frozen networkx graph (read-only: mutating it raises ``NetworkXError``)."""
        return self._graph

    @property
    def name(self) -> str:
        return self._name

    @property
    def iterations(self) -> int:
        return self._iterations

    @property
    def num_ops(self) -> int:
        return self._graph.number_of_nodes()

    @property
    def num_edges(self) -> int:
        return self._graph.number_of_edges()

    @property
    def sequential_iteration_s(self) -> float:
        """Seconds of one iteration with every op run in turn on the reference device."""
        return math.fsum(d["compute_s"] for _, d in self._graph.nodes(data=True))

    @property
    def forward_flops(self) -> float | None:
        """Total forward FLOPs (multiply-add = 2), or None if the graph carries no FLOPs."""
        flops = [d.get("flops") for _, d in self._graph.nodes(data=True) if d["pass"] == "forward"]
        if not flops or any(f is None for f in flops):
            return None
        return math.fsum(flops)

    @property
    def parameter_bytes(self) -> float:
        return math.fsum(d["param_bytes"] for _, d in self._graph.nodes(data=True))

    @property
    def activation_bytes(self) -> float:
        """Bytes of forward activations stashed for the backward pass."""
        return math.fsum(d["activation_bytes"] for _, d in self._graph.nodes(data=True) if d["pass"] == "forward")

    @property
    def key(self) -> str:
        """A content hash: equal for graphs with equal nodes, edges and fields."""
        if self._key is None:
            g = self._graph
            canonical = [
                self._name,
                self._iterations,
                sorted(g.nodes(data=True), key=lambda item: item[0]),
                sorted(g.edges(data=True), key=lambda item: item[:2]),
            ]
            self._key = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]
        return self._key

    def with_iterations(self, iterations: int) -> JobGraph:
        return JobGraph(self._graph, name=self._name, iterations=iterations)

    def to_dict(self) -> dict[str, Any]:
        data = nx.node_link_data(self._graph, edges="edges")
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "name": self._name,
            "iterations": self._iterations,
            "graph": {"nodes": data["nodes"], "edges": data["edges"]},
        }

    def to_json(self, path: str | Path) -> None:
        """Write the graph as versioned node-link JSON (read back by :func:`load_job_graph`)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    def __repr__(self) -> str:
        return f"JobGraph(name={self._name!r}, ops={self.num_ops}, edges={self.num_edges}, iterations={self._iterations})"


def job_graph_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> JobGraph:
    """Build a :class:`JobGraph` from the dict that :meth:`JobGraph.to_dict` writes."""
    if not isinstance(data, Mapping):
        raise GraphValidationError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise GraphValidationError(f"{source}: field 'schema' must be {SCHEMA!r}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise GraphValidationError(f"{source}: unsupported schema_version {version!r} (expected {SCHEMA_VERSION})")
    body = data.get("graph")
    if not isinstance(body, Mapping) or not isinstance(body.get("nodes"), list) or not isinstance(body.get("edges"), list):
        raise GraphValidationError(f"{source}: field 'graph' must hold lists 'nodes' and 'edges'")
    nodes: dict[str, dict] = {}
    for i, node in enumerate(body["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise GraphValidationError(f"{source}: node #{i} has no 'id'")
        attrs = dict(node)
        node_id = attrs.pop("id")
        if not isinstance(node_id, str) or not node_id:
            raise GraphValidationError(f"{source}: node #{i} id must be a non-empty string, got {node_id!r}")
        if node_id in nodes:
            raise GraphValidationError(f"{source}: duplicate node id {node_id!r}")
        nodes[node_id] = attrs
    edges: dict[tuple[str, str], dict] = {}
    for i, edge in enumerate(body["edges"]):
        if not isinstance(edge, dict) or "source" not in edge or "target" not in edge:
            raise GraphValidationError(f"{source}: edge #{i} needs 'source' and 'target'")
        attrs = dict(edge)
        u, v = attrs.pop("source"), attrs.pop("target")
        for end in (u, v):
            if not isinstance(end, str) or end not in nodes:
                raise GraphValidationError(f"{source}: edge {u!r} -> {v!r} refers to unknown node {end!r}")
        if (u, v) in edges:
            raise GraphValidationError(f"{source}: duplicate edge {u!r} -> {v!r}")
        edges[u, v] = attrs
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes.items())
    graph.add_edges_from((u, v, a) for (u, v), a in edges.items())
    name = data.get("name")
    iterations = data.get("iterations", 1000)
    return JobGraph(graph, name=name if isinstance(name, str) else "", iterations=iterations, _owned=True)


def load_job_graph(path: str | Path) -> JobGraph:
    """Load a job graph JSON file written by :meth:`JobGraph.to_json`.

    Raises :class:`GraphValidationError` naming the file and the problem.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise GraphValidationError(f"cannot read job graph {str(path)!r}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphValidationError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return job_graph_from_dict(data, source=str(path))


def _validate(graph: nx.DiGraph, name: str) -> None:
    where = f"graph {name!r}"
    if graph.number_of_nodes() == 0:
        raise GraphValidationError(f"{where}: has no ops")
    for node, attrs in graph.nodes(data=True):
        if attrs.get("pass") not in PASSES:
            raise GraphValidationError(f"{where}: node {node!r} field 'pass' must be one of {PASSES}, got {attrs.get('pass')!r}")
        for field in (*NODE_COST_FIELDS, "flops"):
            if field == "flops" and attrs.get("flops") is None:
                continue
            _check_cost(attrs.get(field), f"{where}: node {node!r} field {field!r}")
    for u, v, attrs in graph.edges(data=True):
        if u == v:
            raise GraphValidationError(f"{where}: self-loop on node {u!r}")
        _check_cost(attrs.get("tensor_bytes"), f"{where}: edge {u!r} -> {v!r} field 'tensor_bytes'")
        if not isinstance(attrs.get("local", False), bool):
            raise GraphValidationError(f"{where}: edge {u!r} -> {v!r} field 'local' must be a boolean")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        path = " -> ".join(str(u) for u, _ in cycle) + f" -> {cycle[0][0]}"
        raise GraphValidationError(f"{where}: has a cycle: {path}")


def _check_cost(value: object, where: str) -> None:
    if value is None:
        raise GraphValidationError(f"{where} is missing")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraphValidationError(f"{where} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise GraphValidationError(f"{where} must be finite, got {value!r}")
    if value < 0:
        raise GraphValidationError(f"{where} must be >= 0, got {value!r}")
