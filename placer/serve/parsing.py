"""A placement request's bytes to a validated :class:`~placer.serve.schemas.PlacementRequest`, bounded before and while
it is parsed: a graph over the server's op or edge limits costs one scan of its bytes (413), a body of too many unknown
keys or JSON values is refused before parsing (:mod:`placer.serve.bodyscan`), and validation stops at the first op or
edge past the limits. ``"graph"`` may name a shipped graph (``"resnet50"``, as the CLI and Python accept): it is read
from placer's own graphs (never a path a request names); an unknown name is one 422 line naming it.
"""

from __future__ import annotations

import hashlib
import json
import re

from pydantic import ValidationError

from placer.common.errors import PlacerError
from placer.graphs.catalog import graphs_dir, shipped_graph_names
from placer.graphs.document import MAX_NAMING_BYTES, describe
from placer.graphs.job_graph import JobGraph
from placer.serve.bodyscan import MAX_UNKNOWN_KEYS, max_values, scan
from placer.serve.errors import GraphTooLargeError, InvalidRequestError
from placer.serve.schemas import GraphPlacement, Placement, PlacementRequest, bounded_request

MAX_NAMED_BODY_BYTES = 64 * 1024  # a request naming a shipped graph is read again with the graph put in: a small one only


def parse_request(body: bytes, max_ops: int, max_edges: int) -> PlacementRequest:
    """The request in ``body`` (JSON), validated as it is parsed; :class:`GraphTooLargeError` for a graph over ``max_ops``
    ops or ``max_edges`` edges, :class:`InvalidRequestError` for one that does not validate (one line for a graph)."""
    for part, limit in (("ops", max_ops), ("edges", max_edges)):
        if _more_keys_than(body, _COUNTED[part], limit):  # before parsing: a huge graph costs one scan of its bytes
            raise _too_large(part, max_ops, max_edges)
    model = bounded_request(max_ops, max_edges)
    if (counts := scan(body, model, max_ops, max_edges)) is not None:  # bounded parsing (bodyscan)
        raise _shapeless(*counts, max_ops, max_edges)
    try:  # the op and edge counts stop validation at max + 1
        return model.model_validate_json(body)
    except ValidationError as exc:
        for e in exc.errors(include_url=False, include_input=False):
            if e["type"] == "too_long" and tuple(e["loc"])[:2] == ("graph", "graph") and len(e["loc"]) == 3:
                raise _too_large("ops" if e["loc"][2] == "nodes" else "edges", max_ops, max_edges) from None
        named = _with_shipped_graph(exc, body)
        if named is not None:
            return parse_request(named, max_ops, max_edges)
        raise _invalid(exc, body) from None


def graph_placement(graph: JobGraph, beta: float, lease_s: float | None = None, iterations: int | None = None) -> GraphPlacement:
    """The placement of ``graph`` asked for in this process; :class:`InvalidRequestError` for terms a request with them
    would be refused for (the same errors, as :func:`parse_request` gives them)."""
    terms: dict = {"beta": float(beta)}
    if lease_s is not None:
        terms["lease_s"] = float(lease_s)
    if iterations is not None:
        terms["iterations"] = int(iterations)
    try:
        return GraphPlacement(graph=graph, **terms)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        raise InvalidRequestError(f"invalid request ({len(errors)} errors)", [{**e, "loc": ("body", *e["loc"])} for e in errors]) from None


def check_graph_size(graph: JobGraph, max_ops: int, max_edges: int) -> None:
    """:class:`GraphTooLargeError` for a built graph over ``max_ops`` ops or ``max_edges`` edges (as :func:`parse_request`)."""
    for part, count, limit in (("ops", graph.num_ops, max_ops), ("edges", graph.num_edges, max_edges)):
        if count > limit:
            raise _too_large(part, max_ops, max_edges)


def request_digest(request: Placement) -> str:
    """The sha256 an idempotency key's retry is matched on: a parsed request's JSON (not its bytes: spacing, key order
    differ); an in-process request's terms and its graph's key."""
    if isinstance(request, GraphPlacement):
        text = json.dumps({**request.model_dump(exclude={"graph"}), "graph_key": request.graph.key}, sort_keys=True)
    else:
        text = request.model_dump_json(by_alias=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _with_shipped_graph(exc: ValidationError, body: bytes) -> bytes | None:
    """``body`` with its ``"graph"`` string replaced by the shipped graph of that name, when that is why it failed (None:
    it is not); :class:`InvalidRequestError` naming an unknown name."""
    first = exc.errors(include_url=False, include_input=False)[0]
    if tuple(first["loc"]) != ("graph",) or first["type"] not in ("model_type", "model_attributes_type", "dict_type"):
        return None
    if len(body) > MAX_NAMED_BODY_BYTES:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    name = data.get("graph") if isinstance(data, dict) else None
    if not isinstance(name, str):
        return None
    shipped = shipped_graph_names()
    if name not in shipped:
        raise InvalidRequestError(f"graph: unknown shipped graph {name[:64]!r}: send a graph document or name one of {', '.join(shipped)}")
    document = json.loads((graphs_dir() / f"{name}.json").read_text(encoding="utf-8"))
    return json.dumps({**data, "graph": document}).encode()


def _shapeless(unknown: int, values: int, max_ops: int, max_edges: int) -> PlacerError:
    """The refusal of a body :func:`~placer.serve.bodyscan.scan` found too many unknown keys or JSON values in."""
    if unknown > MAX_UNKNOWN_KEYS:
        why = f"{unknown} keys that are no field of a placement request (at most {MAX_UNKNOWN_KEYS})"
        return InvalidRequestError(f"invalid request: {why}")
    limit = max_values(max_ops, max_edges)
    return GraphTooLargeError(
        f"request body holds {values} JSON values, more than a graph of {max_ops} ops and {max_edges} edges"
        f" can ({limit}; --max-graph-ops, --max-graph-edges)"
    )


def _too_large(part: str, max_ops: int, max_edges: int) -> GraphTooLargeError:
    limit = max_ops if part == "ops" else max_edges
    return GraphTooLargeError(f"graph has more than {limit} {part}; this server accepts at most {limit} (--max-graph-{part})")


_COUNTED = {"ops": b'"pass"', "edges": b'"target"'}  # a key every op (edge) has and no other part of a graph needs


def _more_keys_than(body: bytes, key: bytes, limit: int) -> bool:
    """Whether ``body`` holds more than ``limit`` JSON keys ``key`` (``"pass"``: every op has one; ``"target"``: every
    edge): a JSON string cannot hold the key's bytes, so more means more than ``limit`` ops or edges (or free-form
    ``graph`` metadata full of such keys). One scan of the bytes, nothing parsed."""
    if body.count(key) <= limit:  # a fast upper bound (values equal to the key count too): most bodies stop here
        return False
    pattern = re.compile(re.escape(key) + rb"\s*:")
    return sum(1 for _, _ in zip(pattern.finditer(body), range(limit + 1), strict=False)) > limit


def _invalid(exc: ValidationError, body: bytes) -> InvalidRequestError:
    """A request that does not validate: one line for the graph document's first problem, else pydantic's error list."""
    errors = exc.errors(include_url=False, include_input=False)  # (inputs are never shown: not made Python objects either)
    first = errors[0]
    if first["loc"][:1] == ("graph",) and len(first["loc"]) > 1 and first["type"] != "json_invalid":
        try:
            data = json.loads(body).get("graph") if len(body) <= MAX_NAMING_BYTES else None  # "node #i" beyond
        except (ValueError, AttributeError):
            data = None
        return InvalidRequestError(f"graph: {describe(exc, data, strip=1)}")
    return InvalidRequestError(f"invalid request ({len(errors)} errors)", [{**e, "loc": ("body", *e["loc"])} for e in errors])
