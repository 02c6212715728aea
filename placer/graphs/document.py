"""The job-graph document: one strict schema for the JSON that :meth:`JobGraph.to_dict` writes.

Every graph that enters the library as data (a file, a service request, a dict) is checked here
first, shapes and values alike; :class:`~placer.graphs.job_graph.JobGraph` then checks what a
schema cannot (ids unique, edges between known ops, no cycles). Types are strict: ``true`` is not
``1`` and ``"3"`` is not a number; an integer is JSON Schema's: ``2.0`` is the ``schema_version`` ``2``, ``2.5`` is none
(:mod:`placer.common.integers`).

    {"schema": "placer.job_graph", "schema_version": 2, "name": "resnet18", "iterations": 1000,
     "batch_size": 128, "profiled_on": {"device": "V100", "precision": "fp32"}, "precision": "fp32",
     "graph": {"nodes": [{"id": "fw:conv1", "name": "aten.conv2d", "pass": "forward",
                          "compute_s": 0.0012, "param_bytes": 37632.0, "activation_bytes": 6422528.0}],
               "edges": [{"source": "fw:conv1", "target": "fw:bn1", "tensor_bytes": 6422528.0}]}}

Nodes and edges validate to plain dicts (TypedDicts), which become the networkx attribute dicts
without another copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from placer.common.errors import GraphValidationError
from placer.common.integers import WHOLE_FLOATS

SCHEMA = "placer.job_graph"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_ITERATIONS = 10**12
MAX_NAME_CHARS = 256  # a graph's name is stored and shown by the service: bounded
MAX_ID_CHARS = 256
MAX_OP_NAME_CHARS = 1024
PASSES = ("forward", "backward")
# Upper bounds that keep every sum finite and flag nonsense: a year per op-iteration, an exabyte, 1e24 FLOP.
LIMITS = {"compute_s": 3.2e7, "param_bytes": 1e18, "activation_bytes": 1e18, "tensor_bytes": 1e18, "flops": 1e24}

_STRICT = ConfigDict(extra="forbid", strict=True)


Seconds = Annotated[float, Field(ge=0, le=LIMITS["compute_s"], allow_inf_nan=False)]
Bytes = Annotated[float, Field(ge=0, le=LIMITS["param_bytes"], allow_inf_nan=False)]
Flops = Annotated[float, Field(ge=0, le=LIMITS["flops"], allow_inf_nan=False)]
OpId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


NodeDocument = TypedDict(  # functional form: "pass" is a keyword
    "NodeDocument",
    {
        "id": OpId,
        "name": Annotated[str, Field(max_length=MAX_OP_NAME_CHARS, description="the op's description")],
        "pass": Literal["forward", "backward"],
        "compute_s": Seconds,
        "param_bytes": Bytes,
        "activation_bytes": Bytes,
        "flops": NotRequired[Flops],
    },
)
NodeDocument.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


class EdgeDocument(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    source: OpId
    target: OpId
    tensor_bytes: Bytes
    local: NotRequired[bool]


class ProfiledOn(BaseModel):
    """Where the op times were measured."""

    model_config = _STRICT
    device: Annotated[str, Field(max_length=64)]
    precision: Annotated[str, Field(max_length=16)]


class GraphBody(BaseModel):
    """Node-link lists (networkx's ``node_link_data`` with ``edges="edges"``)."""

    model_config = _STRICT
    nodes: Annotated[list[NodeDocument], Field(fail_fast=True)]  # the first bad op stops validation: errors stay few
    edges: Annotated[list[EdgeDocument], Field(fail_fast=True)]
    directed: Literal[True] | None = None  # written by networkx; a job graph is always directed
    multigraph: Literal[False] | None = None
    graph: dict[str, Any] | None = None


class GraphDocument(BaseModel):
    """A job graph as JSON: see the module docstring."""

    model_config = _STRICT | ConfigDict(populate_by_name=True)
    schema_: Literal["placer.job_graph"] = Field(alias="schema")
    schema_version: Annotated[int, Field(ge=min(READABLE_VERSIONS), le=max(READABLE_VERSIONS)), WHOLE_FLOATS]
    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
    iterations: Annotated[int, Field(ge=1, le=MAX_ITERATIONS), WHOLE_FLOATS] = 1000
    batch_size: Annotated[int, Field(ge=1, le=10**9), WHOLE_FLOATS] | None = None
    profiled_on: ProfiledOn | None = None
    precision: Annotated[str, Field(max_length=16)] | None = None
    graph: GraphBody


_NODE_LIST = TypeAdapter(list[NodeDocument])
_EDGE_LIST = TypeAdapter(list[EdgeDocument])


def parse_document(data: Mapping[str, Any] | str | bytes, *, source: str) -> GraphDocument:
    """Validate a graph document given as a dict or as JSON text; :class:`GraphValidationError` names the first problem."""
    try:
        if isinstance(data, str | bytes):
            return GraphDocument.model_validate_json(data)
        if not isinstance(data, Mapping):
            raise GraphValidationError(f"{source}: expected a JSON object, got {type(data).__name__}")
        return GraphDocument.model_validate(data)
    except ValidationError as exc:
        raise GraphValidationError(f"{source}: {describe(exc, _as_data(data))}") from None


MAX_NAMING_BYTES = 1024 * 1024  # larger JSON text is not parsed again to name an op by its id (errors say "node #i")


def _as_data(data: object) -> object:
    """The document as Python data, to name the op an error is in (error path only: JSON text of at most
    :data:`MAX_NAMING_BYTES` is parsed again; a larger one is not, so a huge bad document costs one pass)."""
    if isinstance(data, str | bytes):
        if len(data) > MAX_NAMING_BYTES:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None
    return data


def check_node_fields(nodes: list[dict], *, where: str) -> None:
    """Check op attribute dicts (with ``id``) against :data:`NodeDocument`: the schema's rules for graphs built in code."""
    try:
        _NODE_LIST.validate_python(nodes)
    except ValidationError as exc:
        raise GraphValidationError(f"{where}: {describe(exc, {'graph': {'nodes': nodes}}, prefix=('graph', 'nodes'))}") from None


def check_edge_fields(edges: list[dict], *, where: str) -> None:
    """Check edge attribute dicts (with ``source`` and ``target``) against :data:`EdgeDocument`."""
    try:
        _EDGE_LIST.validate_python(edges)
    except ValidationError as exc:
        raise GraphValidationError(f"{where}: {describe(exc, {'graph': {'edges': edges}}, prefix=('graph', 'edges'))}") from None


def describe(exc: ValidationError, data: object, prefix: tuple = (), strip: int = 0) -> str:
    """The first error of ``exc`` in one line: where (``node 'conv1' field 'compute_s'``), what, and a short piece of the input.

    ``data``: the document (to name the op by its id); the error's location is taken without its
    first ``strip`` parts (the document sits in a request) and after ``prefix``."""
    error = exc.errors(include_url=False)[0]
    kind, loc = error["type"], (*prefix, *error["loc"][strip:])
    if kind == "json_invalid":
        reason = str(error.get("ctx", {}).get("error", error["msg"]))
        hint = " (a lone surrogate escape such as \\ud800 is not valid Unicode)" if "hex escape" in reason else ""
        return f"invalid JSON: {reason}{hint}"
    where = _where(loc, data)
    if kind == "missing":
        return f"{where} is missing"
    if kind == "extra_forbidden":
        return f"unknown field {short(loc[-1])}" + (f" in {_where(loc[:-1], data)}" if len(loc) > 1 else "")
    container = kind in ("model_type", "dict_type", "typed_dict_type") and isinstance(error.get("input"), Mapping)
    shown = "" if container else f", got {short(error.get('input'))}"
    if loc[-1:] == ("schema_version",):
        return f"unsupported schema_version {short(error.get('input'))} (readable: {', '.join(map(str, READABLE_VERSIONS))})"
    message = _PLAIN.get(kind) or error["msg"].replace("Input should be", "must be", 1)
    return f"{where} {message}{shown}" if message.startswith("must") else f"{where}: {message}{shown}"


# The same words whether the document came as JSON text or as Python data (pydantic's differ).
_PLAIN = {
    **dict.fromkeys(("model_type", "dict_type", "typed_dict_type", "model_attributes_type"), "must be an object"),
    "list_type": "must be a list",
    **dict.fromkeys(("float_type", "float_parsing"), "must be a number"),
    "finite_number": "must be a finite number",
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float", "int_parsing_size"), "must be an integer"),
    **dict.fromkeys(("string_type", "string_unicode"), "must be a string"),
    "bool_type": "must be true or false",
}


def _where(loc: tuple, data: object) -> str:
    """``node 'a' field 'compute_s'`` for ``("graph", "nodes", 0, "compute_s")``; the id is looked up in ``data``."""
    if len(loc) >= 3 and loc[:2] in (("graph", "nodes"), ("graph", "edges")) and isinstance(loc[2], int):
        item = _item(data, loc[1], loc[2])
        if loc[1] == "nodes":
            ident = item.get("id") if isinstance(item, Mapping) and isinstance(item.get("id"), str) else None
            what = f"node {short(ident)}" if ident else f"node #{loc[2]}"
        else:
            ends = (item.get("source"), item.get("target")) if isinstance(item, Mapping) else (None, None)
            what = f"edge {short(ends[0])} -> {short(ends[1])}" if all(isinstance(e, str) for e in ends) else f"edge #{loc[2]}"
        rest = [p for p in loc[3:] if not (isinstance(p, str) and p.startswith(("function-", "constrained-")))]
        return what + (f" field {short(rest[0])}" if rest else "")
    if not loc:
        return "the document"
    return "field " + short(".".join(str(p) for p in loc))


def _item(data: object, kind: str, index: int) -> object:
    if not isinstance(data, Mapping):
        return None
    items = data.get("graph", {}).get(kind) if isinstance(data.get("graph"), Mapping) else None
    return items[index] if isinstance(items, list) and index < len(items) else None


def short(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: errors never echo a huge input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
