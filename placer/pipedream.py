"""Import PipeDream profile graphs (``graph.txt``) as training job graphs.

Each forward op ``nodeN`` becomes ``fw:nodeN`` and is mirrored by a backward op ``bw:nodeN``
(its ``backward_compute_time``) as :mod:`placer.training` describes; an edge ``u -- v`` carries
``u``'s ``activation_size``.

PipeDream times are milliseconds per minibatch; they become seconds. Parameters are owned
by the forward op (``param_bytes``); the backward op owns none, so nothing is counted twice.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

from placer.errors import GraphValidationError
from placer.graph import JobGraph
from placer.training import training_graph

_NODE = re.compile(
    r"^(?P<id>\S+) -- (?P<desc>.*) -- forward_compute_time=(?P<fw>[^,]+), backward_compute_time=(?P<bw>[^,]+), "
    r"activation_size=(?P<act>[^,]+), parameter_size=(?P<par>\S+)\s*$"
)
_EDGE = re.compile(r"^\s+(?P<u>\S+) -- (?P<v>\S+)\s*$")


def parse_pipedream(text: str, *, name: str, iterations: int = 1000, source: str = "<text>") -> JobGraph:
    """Parse the text of a PipeDream ``graph.txt`` into a training :class:`JobGraph`."""
    forward = nx.DiGraph()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if m := _EDGE.match(line):
            u, v = m["u"], m["v"]
            for end in (u, v):
                if end not in forward:
                    raise GraphValidationError(f"{source}:{lineno}: edge {u} -- {v} refers to unknown node {end!r}")
            forward.add_edge(u, v, tensor_bytes=forward.nodes[u]["activation_bytes"])
        elif m := _NODE.match(line):
            if m["id"] in forward:
                raise GraphValidationError(f"{source}:{lineno}: duplicate node id {m['id']!r}")
            try:
                values = {k: _number(m[k]) for k in ("fw", "bw", "act", "par")}
            except ValueError as exc:
                raise GraphValidationError(f"{source}:{lineno}: bad number: {exc}") from None
            forward.add_node(
                m["id"],
                name=m["desc"],
                compute_s=values["fw"] / 1e3,
                backward_compute_s=values["bw"] / 1e3,
                activation_bytes=values["act"],
                param_bytes=values["par"],
            )
        else:
            raise GraphValidationError(f"{source}:{lineno}: not a PipeDream node or edge line: {line[:80]!r}")
    return JobGraph(training_graph(forward), name=name, iterations=iterations, _owned=True)


def load_pipedream(path: str | Path, *, name: str | None = None, iterations: int = 1000) -> JobGraph:
    """Read a PipeDream ``graph.txt`` file; the graph is named after the file by default."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise GraphValidationError(f"cannot read PipeDream file {str(path)!r}: {exc.strerror or exc}") from None
    return parse_pipedream(text, name=name or path.stem, iterations=iterations, source=str(path))


def _number(text: str) -> float:
    """A PipeDream number; a bracketed list ``[a; b; c]`` (an op with several outputs) sums."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return sum(float(part) for part in text[1:-1].split(";"))
    return float(text)
