"""A scan of a placement request's raw bytes before it is parsed: the work and memory of parsing any body stay bounded.

Parsing builds a value for every JSON value in the body, and validation one error for every key no field has (an
unknown key), before any limit can be checked: an 8 MiB body of 700,000 unknown keys took 9 s and 940 MB to refuse,
4 million zeros 270 MB (audit 2026-11-26). So a body is scanned first, at C speed and with one copy of its bytes at
most (regular expressions and ``bytes.count``, nothing parsed), and refused before parsing when it holds

- more keys that are no field of a placement request than :data:`MAX_UNKNOWN_KEYS` (422, listing none of them): a
  valid request has none, except the keys of a graph's free-form ``graph`` metadata;
- more JSON values than a graph of ``max_ops`` ops and ``max_edges`` edges can hold (:func:`max_values`; 413):
  whatever the body holds, parsing it then costs no more than a graph the server accepts.

The scan reads strings as JSON does (a key is a string followed by ``:``); it only counts, so a body that is not
JSON at all passes it as a count and is refused by the parser, as before.
"""

from __future__ import annotations

import re
import typing

from pydantic import BaseModel

from placer.graphs.document import EdgeDocument, GraphBody, GraphDocument, NodeDocument, ProfiledOn

MAX_UNKNOWN_KEYS = 1000
VALUES_PER_OP = 8  # an op's object, its 7 members but one (the commas) and the comma after it
VALUES_PER_EDGE = 5  # the same for an edge's 4 members
SLACK_VALUES = 1000  # the request's and the document's own fields, a graph's metadata
WINDOW = 1 << 18  # bytes scanned at once


def max_values(max_ops: int, max_edges: int) -> int:
    """The JSON values (objects, lists and the commas between members) a request with a graph of ``max_ops`` ops and
    ``max_edges`` edges holds at most."""
    return VALUES_PER_OP * max_ops + VALUES_PER_EDGE * max_edges + SLACK_VALUES


def _field_names(*models: type) -> frozenset[bytes]:
    """The keys the fields of ``models`` (pydantic models or TypedDicts) are written with, as bytes."""
    names: set[str] = set()
    for model in models:
        if isinstance(model, type) and issubclass(model, BaseModel):
            names |= {f.alias or name for name, f in model.model_fields.items()}
        else:  # a TypedDict
            names |= set(typing.get_type_hints(model))
    return frozenset(name.encode() for name in names)


def _scanner(fields: frozenset[bytes]) -> re.Pattern[bytes]:
    """Either a known field's key with its colon, or any string (no quote inside: escapes were replaced; to its closing
    quote, or the end of a body cut short: each byte is read once, whatever the body)."""
    known = b"|".join(re.escape(name) for name in sorted(fields, key=len, reverse=True))
    return re.compile(rb'"(?:' + known + rb')"[ \t\r\n]*:|"[^"]*+(?:"|\Z)')


_DOCUMENT = (GraphDocument, ProfiledOn, GraphBody, NodeDocument, EdgeDocument)
_FIELDS: dict[type, frozenset[bytes]] = {}
_SCANNERS: dict[frozenset[bytes], re.Pattern[bytes]] = {}
_PER_ITEM = _field_names(NodeDocument, EdgeDocument)  # the keys a graph holds once per op or edge
_GAP = re.compile(rb"[ \t\r\n]*+:?")
_SPACED_KEY = re.compile(rb'"[ \t\r\n]+:')


def scan(body: bytes, request: type[BaseModel], max_ops: int, max_edges: int) -> tuple[int, int] | None:
    """(unknown keys, JSON values) of ``body`` when either is over its limit (module docstring), else None."""
    limit = max_values(max_ops, max_edges)
    values = body.count(b",") + body.count(b"[") + body.count(b"{")
    if body.count(b":") <= MAX_UNKNOWN_KEYS and values <= limit:  # upper bounds (a string's bytes count too): most bodies stop here
        return None
    if b"\\" in body:  # escapes as a byte no field's name has: every quote left begins or ends a string
        body = body.replace(b"\\\\", b"~").replace(b'\\"', b"~")
    if values <= limit:  # a key is a string then ':', the fields' keys each '"name":' (one more for a string that starts with ':')
        spaced = sum(1 for _ in zip(_SPACED_KEY.finditer(body), range(MAX_UNKNOWN_KEYS + 1), strict=False))
        keys = body.count(b'":') + spaced - sum(body.count(b'"%s":' % name) for name in _PER_ITEM)
        if keys <= MAX_UNKNOWN_KEYS:  # (the other fields' few keys count as unknown here)
            return None
    fields = _FIELDS.get(request) or _FIELDS.setdefault(request, _field_names(request, *_DOCUMENT))
    pattern = _SCANNERS.get(fields) or _SCANNERS.setdefault(fields, _scanner(fields))
    unknown = values = quotes = start = 0
    while start < len(body):  # window by window, each cut outside a string: the copies stay small
        end = min(start + WINDOW, len(body))
        if (quotes + body.count(b'"', start, end)) % 2:
            close = body.find(b'"', end)
            end = len(body) if close < 0 else close + 1
        end = _GAP.match(body, end).end()  # type: ignore[union-attr]  # (a key's colon goes with its key)
        quotes += body.count(b'"', start, end)
        rest = pattern.sub(b"", body[start:end])  # structure, numbers, literals, and the colons of unknown keys
        unknown += rest.count(b":")
        values += rest.count(b",") + rest.count(b"[") + rest.count(b"{")
        start = end
    return (unknown, values) if unknown > MAX_UNKNOWN_KEYS or values > limit else None
