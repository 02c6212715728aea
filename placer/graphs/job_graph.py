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

Job-level fields: ``name``, ``iterations`` (training iterations of a job by default) and, all
optional (schema version 2):

- ``batch_size``: samples per iteration (global batch) the costs were measured at;
- ``profiled_on``: ``{"device": <device model>, "precision": <fp32|tf32|bf16|fp16>}``, where
  ``compute_s`` was measured; the cost model rescales op times to the placed device
  (:mod:`placer.cluster.devices`). Absent: times are taken as on a speed-1.0 device;
- ``precision``: the precision the job trains in (default: the profiled precision).

Sizes (``param_bytes``) are fp32 bytes (4 per parameter); activation and tensor bytes are in the
profiled precision.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import networkx as nx

from placer.common.atomic import write_atomic
from placer.common.errors import GraphValidationError
from placer.common.textfile import read_text
from placer.graphs.document import (
    MAX_ITERATIONS,
    MAX_NAME_CHARS,
    SCHEMA,
    SCHEMA_VERSION,
    GraphDocument,
    check_edge_fields,
    check_node_fields,
    parse_document,
    short,
)

NODE_COST_FIELDS = ("compute_s", "param_bytes", "activation_bytes")


class JobGraph:
    """An immutable, validated job graph. Build with :meth:`from_networkx` or load JSON."""

    __slots__ = ("_graph", "_name", "_iterations", "_key", "_batch_size", "_profiled_on", "_precision", "_sequential_s", "_parameter_bytes")

    def __init__(
        self,
        graph: nx.DiGraph,
        *,
        name: str,
        iterations: int = 1000,
        batch_size: int | None = None,
        profiled_on: tuple[str, str] | None = None,
        precision: str | None = None,
        _owned: bool = False,
        _fields_checked: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise GraphValidationError("job graph name must be a non-empty string")
        if len(name) > MAX_NAME_CHARS:
            raise GraphValidationError(f"job graph name has {len(name)} characters; at most {MAX_NAME_CHARS} are allowed")
        _check_text(name, "job graph name")
        if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITERATIONS:
            limit = f"{MAX_ITERATIONS:g}"
            raise GraphValidationError(f"graph {name!r}: iterations must be an integer >= 1 and <= {limit}, got {short(iterations)}")
        bad_batch = isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 10**9
        if batch_size is not None and bad_batch:
            raise GraphValidationError(f"graph {name!r}: batch_size must be an integer in [1, 1e9], got {short(batch_size)}")
        self._profiled_on = _check_profiled_on(profiled_on, name)
        self._precision = _check_precision(precision, name) if precision is not None else (self._profiled_on or (None, None))[1]
        frozen = nx.freeze(graph if _owned else graph.copy())  # _owned: built here, nobody else holds it
        _validate(frozen, name, fields_checked=_fields_checked)
        self._graph = frozen
        self._sequential_s: float | None = None
        self._parameter_bytes: float | None = None
        self._name = name
        self._iterations = iterations
        self._batch_size = batch_size
        self._key: str | None = None

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, *, name: str, iterations: int = 1000, **metadata: Any) -> JobGraph:
        """Validate and copy ``graph``; later changes to ``graph`` do not affect the result.

        ``metadata``: ``batch_size``, ``profiled_on`` ((device, precision)) and ``precision``.
        """
        return cls(graph, name=name, iterations=iterations, **metadata)

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
    def batch_size(self) -> int | None:
        """Samples per iteration the costs were measured at (None: unknown)."""
        return self._batch_size

    @property
    def profiled_on(self) -> tuple[str, str] | None:
        """(device model, precision) the op times were measured on (None: a speed-1.0 device)."""
        return self._profiled_on

    @property
    def precision(self) -> str | None:
        """Precision the job trains in (None: as profiled, unknown)."""
        return self._precision

    def _metadata(self) -> dict[str, Any]:
        return {"batch_size": self._batch_size, "profiled_on": self._profiled_on, "precision": self._precision}

    @property
    def num_ops(self) -> int:
        return self._graph.number_of_nodes()

    @property
    def num_edges(self) -> int:
        return self._graph.number_of_edges()

    @property
    def sequential_iteration_s(self) -> float:
        """Seconds of one iteration with every op run in turn on the reference device."""
        if self._sequential_s is None:  # the graph is frozen: sum once
            self._sequential_s = math.fsum(d["compute_s"] for _, d in self._graph.nodes(data=True))
        return self._sequential_s

    @property
    def forward_flops(self) -> float | None:
        """Total forward FLOPs (multiply-add = 2), or None if the graph carries no FLOPs."""
        flops = [d.get("flops") for _, d in self._graph.nodes(data=True) if d["pass"] == "forward"]
        if not flops or any(f is None for f in flops):
            return None
        return math.fsum(flops)

    @property
    def parameter_bytes(self) -> float:
        """Bytes of the model's parameters, summed over its ops (once: the graph is frozen)."""
        if self._parameter_bytes is None:
            self._parameter_bytes = math.fsum(d["param_bytes"] for _, d in self._graph.nodes(data=True))
        return self._parameter_bytes

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
                *([self._metadata()] if any(v is not None for v in self._metadata().values()) else []),
                sorted(g.nodes(data=True), key=lambda item: item[0]),
                sorted(g.edges(data=True), key=lambda item: item[:2]),
            ]
            self._key = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]
        return self._key

    def with_iterations(self, iterations: int) -> JobGraph:
        return self._same_ops(iterations=iterations)

    def with_precision(self, precision: str) -> JobGraph:
        """The same job trained in ``precision`` (fp32, tf32, bf16 or fp16)."""
        return self._same_ops(precision=precision)

    def _same_ops(self, **changes: Any) -> JobGraph:
        """This job with other job-level fields: the frozen, checked ops are shared, not copied or checked again."""
        fields = {"iterations": self._iterations, **self._metadata(), **changes}
        return JobGraph(self._graph, name=self._name, _owned=True, _fields_checked=True, **fields)

    def with_batch_size(self, batch_size: int) -> JobGraph:
        """The same job at global batch ``batch_size``.

        Linear approximation: per-op ``compute_s`` and ``flops``, ``activation_bytes`` and edge
        ``tensor_bytes`` scale by ``batch_size / self.batch_size``; parameters do not change.
        Kernel efficiency at small batches is not modelled.
        """
        if self._batch_size is None:
            raise GraphValidationError(f"graph {self._name!r} records no batch_size, so it cannot be rescaled")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise GraphValidationError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        k = batch_size / self._batch_size
        g = nx.DiGraph()
        for node, a in self._graph.nodes(data=True):
            scaled = {f: a[f] * k for f in ("compute_s", "activation_bytes", "flops") if a.get(f) is not None}
            g.add_node(node, **(dict(a) | scaled))
        for u, v, a in self._graph.edges(data=True):
            g.add_edge(u, v, **(dict(a) | {"tensor_bytes": a["tensor_bytes"] * k}))
        meta = self._metadata() | {"batch_size": batch_size}
        return JobGraph(g, name=self._name, iterations=self._iterations, _owned=True, **meta)

    def to_dict(self) -> dict[str, Any]:
        data = nx.node_link_data(self._graph, edges="edges")
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "name": self._name,
            "iterations": self._iterations,
            **({"batch_size": self._batch_size} if self._batch_size is not None else {}),
            **({"profiled_on": {"device": self._profiled_on[0], "precision": self._profiled_on[1]}} if self._profiled_on else {}),
            **({"precision": self._precision} if self._precision is not None else {}),
            "graph": {"nodes": data["nodes"], "edges": data["edges"]},
        }

    def to_json(self, path: str | Path) -> None:
        """Write the graph as versioned node-link JSON (read back by :func:`load_job_graph`), atomically."""
        try:
            write_atomic(path, json.dumps(self.to_dict(), indent=1) + "\n")
        except OSError as exc:
            raise GraphValidationError(f"cannot write job graph to {str(path)!r}: {exc.strerror or exc}") from None

    def __repr__(self) -> str:
        return f"JobGraph(name={self._name!r}, ops={self.num_ops}, edges={self.num_edges}, iterations={self._iterations})"


def job_graph_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> JobGraph:
    """Build a :class:`JobGraph` from the dict that :meth:`JobGraph.to_dict` writes (see :mod:`placer.graphs.document`)."""
    return job_graph_from_document(parse_document(data, source=source), source=source)


def job_graph_from_json(text: str | bytes, *, source: str = "<json>") -> JobGraph:
    """Build a :class:`JobGraph` from JSON text, validated as it is parsed (no intermediate dict)."""
    return job_graph_from_document(parse_document(text, source=source), source=source)


def job_graph_from_document(document: GraphDocument, *, source: str) -> JobGraph:
    """The graph of a validated document: ids unique, edges between known ops, no cycles."""
    nodes: dict[str, dict] = {}
    for node in document.graph.nodes:
        attrs = cast(dict[str, Any], node)  # the document's dicts are its own: they become the graph's attribute dicts
        node_id = attrs.pop("id")
        if node_id in nodes:
            raise GraphValidationError(f"{source}: duplicate node id {short(node_id)}")
        nodes[node_id] = attrs
    edges: dict[tuple[str, str], dict] = {}
    for edge in document.graph.edges:
        attrs = cast(dict[str, Any], edge)
        u, v = attrs.pop("source"), attrs.pop("target")
        for end in (u, v):
            if end not in nodes:
                raise GraphValidationError(f"{source}: edge {short(u)} -> {short(v)} refers to unknown node {short(end)}")
        if (u, v) in edges:
            raise GraphValidationError(f"{source}: duplicate edge {short(u)} -> {short(v)}")
        edges[u, v] = attrs
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes.items())
    graph.add_edges_from((u, v, a) for (u, v), a in edges.items())
    profiled = document.profiled_on
    try:
        return JobGraph(
            graph,
            name=document.name,
            iterations=document.iterations,
            batch_size=document.batch_size,
            profiled_on=(profiled.device, profiled.precision) if profiled else None,
            precision=document.precision,
            _owned=True,
            _fields_checked=True,
        )
    except GraphValidationError as exc:
        raise GraphValidationError(f"{source}: {exc}") from None


def load_job_graph(path: str | Path) -> JobGraph:
    """Load a job graph JSON file written by :meth:`JobGraph.to_json`.

    Raises :class:`GraphValidationError` naming the file and the problem.
    """
    path = Path(path)
    text = read_text(path, what="job graph", error=GraphValidationError)
    return job_graph_from_json(text, source=str(path))


def _validate(graph: nx.DiGraph, name: str, *, fields_checked: bool = False) -> None:
    """What a graph must be: its ops' and edges' fields as :mod:`placer.graphs.document` says (unless a
    document was already checked), at least one op that takes time and one forward op, text that is valid Unicode, no cycle."""
    where = f"graph {name!r}"
    if graph.number_of_nodes() == 0:
        raise GraphValidationError(f"{where}: has no ops")
    if not fields_checked:
        check_node_fields([{"id": node, **attrs} for node, attrs in graph.nodes(data=True)], where=where)
        check_edge_fields([{"source": u, "target": v, **attrs} for u, v, attrs in graph.edges(data=True)], where=where)
    for node, attrs in graph.nodes(data=True):
        _check_text(node, f"{where}: a node id")
        _check_text(attrs["name"], f"{where}: node {node!r} field 'name'")
    loop = next((u for u, v in graph.edges if u == v), None)
    if loop is not None:
        raise GraphValidationError(f"{where}: self-loop on node {loop!r}")
    if not any(attrs["compute_s"] > 0 for _, attrs in graph.nodes(data=True)):
        raise GraphValidationError(f"{where}: every op takes 0 s; at least one must take time")
    if not any(attrs["pass"] == "forward" for _, attrs in graph.nodes(data=True)):
        raise GraphValidationError(f"{where}: has no forward ops (every op is 'backward'); a job graph needs its forward pass")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        path = " -> ".join(str(u) for u, _ in cycle) + f" -> {cycle[0][0]}"
        raise GraphValidationError(f"{where}: has a cycle: {path}")


def _check_precision(precision: object, name: str) -> str:
    from placer.cluster.devices import PRECISIONS

    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise GraphValidationError(f"graph {name!r}: precision must be one of {', '.join(PRECISIONS)}, got {short(precision)}")
    return precision


def _check_profiled_on(profiled_on: object, name: str) -> tuple[str, str] | None:
    from placer.cluster.devices import DEVICE_MODELS

    if profiled_on is None:
        return None
    if not isinstance(profiled_on, tuple | list) or len(profiled_on) != 2:
        raise GraphValidationError(f"graph {name!r}: profiled_on must be (device, precision), got {profiled_on!r}")
    device, precision = profiled_on
    if not isinstance(device, str) or device not in DEVICE_MODELS:
        raise GraphValidationError(f"graph {name!r}: profiled_on device {short(device)} is unknown (known: {', '.join(DEVICE_MODELS)})")
    return (device, _check_precision(precision, name))


def _check_text(value: object, where: str) -> None:
    """Names end up in JSON responses and logs: they must be UTF-8 encodable (no lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise GraphValidationError(f"{where} is not valid Unicode text (a lone surrogate?)") from None
