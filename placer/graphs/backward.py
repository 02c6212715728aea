"""Turn a forward graph into a training graph: every forward op mirrored by a backward op.

Forward node attributes in: ``name``, ``compute_s``, ``backward_compute_s``, ``param_bytes``,
``activation_bytes`` and optionally ``flops`` and ``backward_flops``; edge attribute
``tensor_bytes``. Out, for each forward op ``x``:

- ``fw:x`` (pass ``forward``) owning the parameters, and ``bw:x`` (pass ``backward``, no
  parameters, its own compute and FLOPs);
- ``fw:u -> fw:v`` carries ``u -> v``'s tensor; ``bw:v -> bw:u`` carries its gradient (same bytes);
- ``fw:x -> bw:x`` is ``local``: the backward op reads activations stashed on its own device.
"""

from __future__ import annotations

import networkx as nx


def training_graph(forward: nx.DiGraph) -> nx.DiGraph:
    graph = nx.DiGraph()
    for op, a in forward.nodes(data=True):
        common = {"name": a["name"], "activation_bytes": a["activation_bytes"]}
        fw = {"pass": "forward", "compute_s": a["compute_s"], "param_bytes": a["param_bytes"], **common}
        bw = {"pass": "backward", "compute_s": a["backward_compute_s"], "param_bytes": 0.0, **common}
        if a.get("flops") is not None:
            fw["flops"], bw["flops"] = a["flops"], a["backward_flops"]
        graph.add_node(f"fw:{op}", **fw)
        graph.add_node(f"bw:{op}", **bw)
        graph.add_edge(f"fw:{op}", f"bw:{op}", tensor_bytes=a["activation_bytes"], local=True)
    for u, v, a in forward.edges(data=True):
        graph.add_edge(f"fw:{u}", f"fw:{v}", tensor_bytes=a["tensor_bytes"], local=False)
        graph.add_edge(f"bw:{v}", f"bw:{u}", tensor_bytes=a["tensor_bytes"], local=False)
    return graph
