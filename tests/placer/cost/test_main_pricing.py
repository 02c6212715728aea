"""Cluster files that do not opt into issue 51's communication terms are priced bit for bit as before them.

``main_predictions.json`` holds ``CostModel.predict(...).iteration_s`` for every shipped cluster file, a few graphs and
placements, computed by main's code before the terms existed (commit 43f06cd). Regenerate it only from such a checkout::

    cd <main checkout> && python <this file> --write <path to main_predictions.json>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIXTURE = Path(__file__).with_name("main_predictions.json")
CLUSTERS = ("dgx8x8", "dgxh100", "mixed", "pacml", "testbeds/gavel_k80", "testbeds/gavel_p100", "testbeds/gavel_v100")
GRAPHS = ("resnet50", "bert_base", "gpt2_medium", "vgg16")


def placements(servers: tuple[tuple[int, ...], ...]) -> list[list[int]]:
    """1 device; 2 and all on one server; 1, 2 and all per server on 2 servers; 1 per server on up to 4 servers."""
    first, out = servers[0], [[servers[0][0]]]
    out += [list(first[:2]), list(first)] if len(first) > 1 else []
    two = [s for s in servers[:2]]
    if len(two) == 2:
        out += [[s[0] for s in two], [d for s in two for d in s[:2]], [d for s in two for d in s]]
        out += [[s[0] for s in servers[:4]]] if len(servers) > 2 else []
    unique: list[list[int]] = []
    for p in out:
        if p not in unique:
            unique.append(p)
    return unique


def predictions() -> list[dict]:
    from placer.cluster.topology import load_cluster
    from placer.common.shipped import data_dir
    from placer.cost.model import CostModel
    from placer.graphs.catalog import resolve_graph

    out = []
    for name in CLUSTERS:
        cluster = load_cluster(data_dir() / "clusters" / f"{name}.toml")
        model = CostModel(cluster)
        for graph_name in GRAPHS:
            graph = resolve_graph(graph_name)
            for devices in placements(cluster.devices_of_server):
                p = model.predict(graph, devices)
                out.append({"cluster": name, "graph": graph_name, "devices": devices, "iteration_s": p.iteration_s})
    return out


def test_files_without_the_new_terms_are_priced_exactly_as_before():
    expected = json.loads(FIXTURE.read_text())
    actual = predictions()
    assert [(e["cluster"], e["graph"], e["devices"]) for e in expected] == [(a["cluster"], a["graph"], a["devices"]) for a in actual]
    moved = [(e["cluster"], e["graph"], e["devices"], e["iteration_s"], a["iteration_s"]) for e, a in zip(expected, actual, strict=True)]
    moved = [m for m in moved if m[3] != m[4]]  # exact: bit for bit (the JSON keeps every float's repr)
    assert not moved, moved


if __name__ == "__main__" and sys.argv[1:2] == ["--write"]:
    Path(sys.argv[2]).write_text("[\n" + ",\n".join(json.dumps(p) for p in predictions()) + "\n]\n")
