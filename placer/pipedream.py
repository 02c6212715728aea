"""Import PipeDream profile graphs (``graph.txt``) as training job graphs.

Each forward op ``nodeN`` becomes ``fw:nodeN`` and is mirrored by a backward op
``bw:nodeN`` (its ``backward_compute_time``). Edges:

- forward ``fw:u -> fw:v`` carries ``u``'s activation (``activation_size`` of ``u``);
- backward ``bw:v -> bw:u`` carries the gradient of that activation (same bytes);
- ``fw:v -> bw:v`` is ``local``: the backward op reads the activation stashed on its own
  device, so it never communicates; it orders every op's backward after its forward.

PipeDream times are milliseconds per minibatch; they become seconds. Parameters are owned
by the forward op (``param_bytes``); the backward op owns none, so nothing is counted twice.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

from placer.errors import GraphValidationError
from placer.graph import JobGraph

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
            forward.add_edge(u, v)
        elif m := _NODE.match(line):
            if m["id"] in forward:
                raise GraphValidationError(f"{source}:{lineno}: duplicate node id {m['id']!r}")
            try:
                values = {k: _number(m[k]) for k in ("fw", "bw", "act", "par")}
            except ValueError as exc:
                raise GraphValidationError(f"{source}:{lineno}: bad number: {exc}") from None
            forward.add_node(m["id"], desc=m["desc"], **values)
        else:
            raise GraphValidationError(f"{source}:{lineno}: not a PipeDream node or edge line: {line[:80]!r}")
    return JobGraph(_training_graph(forward), name=name, iterations=iterations)


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


def _training_graph(forward: nx.DiGraph) -> nx.DiGraph:
    graph = nx.DiGraph()
    for op, a in forward.nodes(data=True):
        common = {"name": a["desc"], "activation_bytes": a["act"]}
        graph.add_node(f"fw:{op}", **{"pass": "forward"}, compute_s=a["fw"] / 1e3, param_bytes=a["par"], **common)
        graph.add_node(f"bw:{op}", **{"pass": "backward"}, compute_s=a["bw"] / 1e3, param_bytes=0.0, **common)
        graph.add_edge(f"fw:{op}", f"bw:{op}", tensor_bytes=a["act"], local=True)
    for u, v in forward.edges:
        size = forward.nodes[u]["act"]
        graph.add_edge(f"fw:{u}", f"fw:{v}", tensor_bytes=size, local=False)
        graph.add_edge(f"bw:{v}", f"bw:{u}", tensor_bytes=size, local=False)
    return graph
