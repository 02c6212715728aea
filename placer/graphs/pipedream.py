"""Import PipeDream profile graphs (``graph.txt``) as training job graphs.

Each forward op ``nodeN`` becomes ``fw:nodeN`` and is mirrored by a backward op ``bw:nodeN``
(its ``backward_compute_time``) as :mod:`placer.graphs.backward` describes; an edge ``u -- v`` carries
``u``'s ``activation_size``.

PipeDream times are milliseconds per minibatch; they become seconds. Parameters are owned
by the forward op (``param_bytes``); the backward op owns none, so nothing is counted twice.

Provenance: PipeDream profiled on NVIDIA V100 GPUs in FP32 (its paper's clusters), so graphs
record ``profiled_on = ("V100-16GB", "fp32")`` and train in ``tf32`` (PyTorch's default for
convolutions on Ampere and newer; a V100 runs it as fp32). The batch size is read from the
``Input`` op's fp32 image tensor (3 x 224 x 224 or 3 x 299 x 299 per sample) unless given.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

from placer.common.errors import GraphValidationError
from placer.common.textfile import read_text
from placer.graphs.backward import training_graph
from placer.graphs.job_graph import JobGraph

_NODE = re.compile(
    r"^(?P<id>\S+) -- (?P<desc>.*) -- forward_compute_time=(?P<fw>[^,]+), backward_compute_time=(?P<bw>[^,]+), "
    r"activation_size=(?P<act>[^,]+), parameter_size=(?P<par>\S+)\s*$"
)
_EDGE = re.compile(r"^\s+(?P<u>\S+) -- (?P<v>\S+)\s*$")


PIPEDREAM_DEVICE = ("V100-16GB", "fp32")
_IMAGE_BYTES = (3 * 224 * 224 * 4, 3 * 299 * 299 * 4)


def parse_pipedream(
    text: str,
    *,
    name: str,
    iterations: int = 1000,
    source: str = "<text>",
    batch_size: int | None = None,
    profiled_on: tuple[str, str] | None = PIPEDREAM_DEVICE,
    precision: str | None = "tf32",
) -> JobGraph:
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
    batch_size = batch_size or _image_batch(forward)
    return JobGraph(
        training_graph(forward),
        name=name,
        iterations=iterations,
        batch_size=batch_size,
        profiled_on=profiled_on,
        precision=precision,
        _owned=True,
    )


def _image_batch(forward: nx.DiGraph) -> int | None:
    """Samples per minibatch from the ``Input`` op's fp32 image tensor, if it is one."""
    for _, a in forward.nodes(data=True):
        if a["name"].startswith("Input") and a["activation_bytes"] > 0:
            for per_sample in _IMAGE_BYTES:
                if a["activation_bytes"] % per_sample == 0:
                    return int(a["activation_bytes"] // per_sample)
    return None


def load_pipedream(path: str | Path, *, name: str | None = None, iterations: int = 1000, batch_size: int | None = None) -> JobGraph:
    """Read a PipeDream ``graph.txt`` file; the graph is named after the file by default."""
    path = Path(path)
    text = read_text(path, what="PipeDream file", error=GraphValidationError)
    return parse_pipedream(text, name=name or path.stem, iterations=iterations, source=str(path), batch_size=batch_size)


def _number(text: str) -> float:
    """A PipeDream number; a bracketed list ``[a; b; c]`` (an op with several outputs) sums."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return sum(float(part) for part in text[1:-1].split(";"))
    return float(text)
