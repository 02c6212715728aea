"""Scaling efficiency against degree on a cluster, new cost model (``auto``) against ``sipml``.

    python experiments/studies/scaling_plot.py [--cluster dgx8x8] [--out docs/scaling_dgx8x8.png] [--json FILE] [--smoke]

Efficiency = sequential time / (degree x iteration time), each graph at its profiled batch,
placed packed (fewest servers) on the idle cluster. ``--json`` writes the numbers (the result file
``python -m tools.figures`` renders the scaling table and plot of docs/cost-model.md from); ``--smoke``
checks two graphs at degrees up to 4 and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from placer import load_cluster, resolve_graph
from placer.cluster.placement import best_fit
from placer.cost import CostModel
from tools.figures.render import scaling_plot

PLOTTED = ("resnet50", "vgg16", "inception_v3", "gnmt", "gpt2_small", "gpt2_medium", "llama_850m")
TABLE = ("alexnet", "vgg16", "resnet18", "resnet50", "inception_v3", "gnmt", "gpt2_small", "gpt2_medium", "bert_base", "llama_850m")


def measure(cluster_name: str, graphs: tuple[str, ...], degrees: list[int]) -> dict:
    """Per graph and cost model, each degree's efficiency and the split chosen."""
    cluster = load_cluster(cluster_name)
    out: dict = {}
    for strategy in ("sipml", "auto"):
        cost = CostModel(cluster, strategy=strategy)
        for name in graphs:
            graph = resolve_graph(name)
            seq = cost.sequential_iteration_s(graph)
            row = out.setdefault(name, {"batch": graph.batch_size})
            for d in degrees:
                prediction = cost.predict(graph, best_fit(cluster, np.ones(cluster.num_devices, dtype=bool), d))
                label = prediction.strategy.label if prediction.strategy else "none"
                row.setdefault(strategy, {})[str(d)] = {"efficiency": round(seq / (d * prediction.iteration_s), 4), "strategy": label}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="dgx8x8")
    parser.add_argument("--out", default="docs/scaling_dgx8x8.png")
    parser.add_argument("--json", default=None, help="write the numbers here instead of drawing")
    parser.add_argument("--smoke", action="store_true", help="two graphs, degrees up to 4, nothing written")
    args = parser.parse_args()
    cluster = load_cluster(args.cluster)
    degrees = [d for d in ((1, 2, 4) if args.smoke else (1, 2, 4, 8, 16, 32, 64)) if d <= cluster.num_devices]
    plotted, table = (("resnet50", "gpt2_small"), ()) if args.smoke else (PLOTTED, TABLE)
    data = {
        "cluster": cluster.name,
        "shape": f"{cluster.num_servers} servers x {cluster.max_devices_per_server} GPUs",
        "degrees": degrees,
        "plotted": list(plotted),
        "table": list(table),
        "graphs": measure(args.cluster, tuple(dict.fromkeys(plotted + table)), degrees),
    }
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            scaling_plot(data, Path(tmp) / "scaling.png")
        print("smoke: scaling_plot ok")
    elif args.json:
        Path(args.json).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.json}")
    else:
        scaling_plot(data, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
