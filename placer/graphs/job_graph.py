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
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from placer.common.errors import GraphValidationError
from placer.common.textfile import read_text

SCHEMA = "placer.job_graph"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
NODE_COST_FIELDS = ("compute_s", "param_bytes", "activation_bytes")
# Upper bounds that keep every sum finite and flag nonsense: a year per op-iteration, an exabyte, 1e24 FLOP.
LIMITS = {"compute_s": 3.2e7, "param_bytes": 1e18, "activation_bytes": 1e18, "tensor_bytes": 1e18, "flops": 1e24}
NODE_FIELDS = {"name", "pass", *NODE_COST_FIELDS, "flops"}
EDGE_FIELDS = {"tensor_bytes", "local"}
TOP_LEVEL_FIELDS = {"schema", "schema_version", "name", "iterations", "batch_size", "profiled_on", "precision", "graph"}
MAX_ITERATIONS = 10**12
MAX_NAME_CHARS = 256  # a graph's name is stored and shown by the service: bounded
PASSES = ("forward", "backward")


class JobGraph:
    """An immutable, validated job graph. Build with :meth:`from_networkx` or load JSON."""

    __slots__ = ("_graph", "_name", "_iterations", "_key", "_batch_size", "_profiled_on", "_precision", "_sequential_s")

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
    ) -> None:
        if not isinstance(name, str) or not name:
            raise GraphValidationError("job graph name must be a non-empty string")
        if len(name) > MAX_NAME_CHARS:
            raise GraphValidationError(f"job graph name has {len(name)} characters; at most {MAX_NAME_CHARS} are allowed")
        _check_text(name, "job graph name")
        if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITERATIONS:
            limit = f"{MAX_ITERATIONS:g}"
            raise GraphValidationError(f"graph {name!r}: iterations must be an integer >= 1 and <= {limit}, got {_short(iterations)}")
        bad_batch = isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 10**9
        if batch_size is not None and bad_batch:
            raise GraphValidationError(f"graph {name!r}: batch_size must be an integer in [1, 1e9], got {_short(batch_size)}")
        self._profiled_on = _check_profiled_on(profiled_on, name)
        self._precision = _check_precision(precision, name) if precision is not None else (self._profiled_on or (None, None))[1]
        frozen = nx.freeze(graph if _owned else graph.copy())  # _owned: built here, nobody else holds it
        _validate(frozen, name)
        self._graph = frozen
        self._sequential_s: float | None = None
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
                *([self._metadata()] if any(v is not None for v in self._metadata().values()) else []),
                sorted(g.nodes(data=True), key=lambda item: item[0]),
                sorted(g.edges(data=True), key=lambda item: item[:2]),
            ]
            self._key = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]
        return self._key

    def with_iterations(self, iterations: int) -> JobGraph:
        return JobGraph(self._graph, name=self._name, iterations=iterations, **self._metadata())

    def with_precision(self, precision: str) -> JobGraph:
        """The same job trained in ``precision`` (fp32, tf32, bf16 or fp16)."""
        return JobGraph(self._graph, name=self._name, iterations=self._iterations, **(self._metadata() | {"precision": precision}))

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
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
            os.replace(tmp, path)
        except OSError as exc:
            if tmp.parent.is_dir():
                tmp.unlink(missing_ok=True)
            raise GraphValidationError(f"cannot write job graph to {str(path)!r}: {exc.strerror or exc}") from None

    def __repr__(self) -> str:
        return f"JobGraph(name={self._name!r}, ops={self.num_ops}, edges={self.num_edges}, iterations={self._iterations})"


def job_graph_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> JobGraph:
    """Build a :class:`JobGraph` from the dict that :meth:`JobGraph.to_dict` writes."""
    if not isinstance(data, Mapping):
        raise GraphValidationError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise GraphValidationError(f"{source}: field 'schema' must be {SCHEMA!r}")
    _no_unknown(data, TOP_LEVEL_FIELDS, source)
    version = data.get("schema_version")
    if type(version) is not int or version not in READABLE_VERSIONS:  # true == 1 and 1.0 == 1 in Python: not versions
        raise GraphValidationError(f"{source}: unsupported schema_version {version!r} (readable: {', '.join(map(str, READABLE_VERSIONS))})")
    body = data.get("graph")
    if not isinstance(body, Mapping) or not isinstance(body.get("nodes"), list) or not isinstance(body.get("edges"), list):
        raise GraphValidationError(f"{source}: field 'graph' must hold lists 'nodes' and 'edges'")
    _no_unknown(body, {"nodes", "edges", "directed", "multigraph", "graph"}, f"{source}: field 'graph'")
    nodes: dict[str, dict] = {}
    for i, node in enumerate(body["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise GraphValidationError(f"{source}: node #{i} has no 'id'")
        _no_unknown(node, NODE_FIELDS | {"id"}, f"{source}: node #{i}")
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
        _no_unknown(edge, EDGE_FIELDS | {"source", "target"}, f"{source}: edge #{i}")
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
    profiled = data.get("profiled_on")
    if profiled is not None:
        if not isinstance(profiled, Mapping) or set(profiled) != {"device", "precision"}:
            raise GraphValidationError(f"{source}: field 'profiled_on' must be an object with exactly 'device' and 'precision'")
        profiled = (profiled["device"], profiled["precision"])
    try:
        return JobGraph(
            graph,
            name=name if isinstance(name, str) else "",
            iterations=iterations,
            batch_size=data.get("batch_size"),
            profiled_on=profiled,
            precision=data.get("precision"),
            _owned=True,
        )
    except GraphValidationError as exc:
        raise GraphValidationError(f"{source}: {exc}") from None


def load_job_graph(path: str | Path) -> JobGraph:
    """Load a job graph JSON file written by :meth:`JobGraph.to_json`.

    Raises :class:`GraphValidationError` naming the file and the problem.
    """
    path = Path(path)
    text = read_text(path, what="job graph", error=GraphValidationError)
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
            _check_cost(attrs.get(field), f"{where}: node {node!r} field {field!r}", LIMITS[field])
        _check_text(node, f"{where}: a node id")
        if not isinstance(attrs.get("name"), str):
            raise GraphValidationError(f"{where}: node {node!r} field 'name' must be a string (the op's description)")
        _check_text(attrs.get("name"), f"{where}: node {node!r} field 'name'")
    for u, v, attrs in graph.edges(data=True):
        if u == v:
            raise GraphValidationError(f"{where}: self-loop on node {u!r}")
        _check_cost(attrs.get("tensor_bytes"), f"{where}: edge {u!r} -> {v!r} field 'tensor_bytes'", LIMITS["tensor_bytes"])
        if not isinstance(attrs.get("local", False), bool):
            raise GraphValidationError(f"{where}: edge {u!r} -> {v!r} field 'local' must be a boolean")
    if not any(attrs["compute_s"] > 0 for _, attrs in graph.nodes(data=True)):
        raise GraphValidationError(f"{where}: every op takes 0 s; at least one must take time")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        path = " -> ".join(str(u) for u, _ in cycle) + f" -> {cycle[0][0]}"
        raise GraphValidationError(f"{where}: has a cycle: {path}")


def _no_unknown(fields: Mapping, known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in fields if k not in known)
    if unknown:
        raise GraphValidationError(f"{where}: unknown field {_short(unknown[0])} (known: {', '.join(sorted(known))})")


def _check_precision(precision: object, name: str) -> str:
    from placer.cluster.devices import PRECISIONS

    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise GraphValidationError(f"graph {name!r}: precision must be one of {', '.join(PRECISIONS)}, got {_short(precision)}")
    return precision


def _check_profiled_on(profiled_on: object, name: str) -> tuple[str, str] | None:
    from placer.cluster.devices import DEVICE_MODELS

    if profiled_on is None:
        return None
    if not isinstance(profiled_on, tuple | list) or len(profiled_on) != 2:
        raise GraphValidationError(f"graph {name!r}: profiled_on must be (device, precision), got {profiled_on!r}")
    device, precision = profiled_on
    if not isinstance(device, str) or device not in DEVICE_MODELS:
        raise GraphValidationError(f"graph {name!r}: profiled_on device {_short(device)} is unknown (known: {', '.join(DEVICE_MODELS)})")
    return (device, _check_precision(precision, name))


def _check_cost(value: object, where: str, limit: float) -> None:
    if value is None:
        raise GraphValidationError(f"{where} is missing")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraphValidationError(f"{where} must be a number, got {_short(value)}")
    if isinstance(value, int) and abs(value) > limit:  # before float(): huge ints overflow it
        raise GraphValidationError(f"{where} must be at most {limit:g}, got an integer of {len(str(abs(value)))} digits")
    if not math.isfinite(value):
        raise GraphValidationError(f"{where} must be finite, got {value!r}")
    if value < 0:
        raise GraphValidationError(f"{where} must be >= 0, got {value!r}")
    if value > limit:
        raise GraphValidationError(f"{where} must be at most {limit:g}, got {value!r}")


def _check_text(value: object, where: str) -> None:
    """Names end up in JSON responses and logs: they must be UTF-8 encodable (no lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise GraphValidationError(f"{where} is not valid Unicode text (a lone surrogate?)") from None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
