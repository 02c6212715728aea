"""Scaling efficiency against degree on a cluster, new cost model (``auto``) against ``sipml``.

    python benchmarks/scaling_plot.py [--cluster dgx8x8] [--out docs/scaling_dgx8x8.png]

Efficiency = sequential time / (degree x iteration time), each graph at its profiled batch,
placed packed (fewest servers) on the idle cluster.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from placer import load_cluster, resolve_graph  # noqa: E402
from placer.cluster.placement import best_fit  # noqa: E402
from placer.cost import CostModel  # noqa: E402

GRAPHS = ("resnet50", "vgg16", "inception_v3", "gnmt", "gpt2_small", "gpt2_medium", "llama_850m")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="dgx8x8")
    parser.add_argument("--out", default="docs/scaling_dgx8x8.png")
    args = parser.parse_args()
    cluster = load_cluster(args.cluster)

    degrees = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= cluster.num_devices]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, strategy in zip(axes, ("sipml", "auto"), strict=True):
        cost = CostModel(cluster, strategy=strategy)
        for name in GRAPHS:
            graph = resolve_graph(name)
            seq = cost.sequential_iteration_s(graph)
            free = np.ones(cluster.num_devices, dtype=bool)
            eff = [seq / (d * cost.predict(graph, best_fit(cluster, free, d)).iteration_s) for d in degrees]
            ax.plot(degrees, eff, marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(degrees, [str(d) for d in degrees])
        ax.set_xlabel("degree (GPUs, packed on the fewest servers)")
        ax.set_title(f"{'PAC-ML op splitting (sipml)' if strategy == 'sipml' else 'data x tensor x pipeline (auto)'}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("scaling efficiency (sequential / (degree x time))")
    axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
    shape = f"{cluster.num_servers} servers x {cluster.max_devices_per_server} GPUs"
    fig.suptitle(f"How far jobs scale on {cluster.name} ({shape}), each graph at its profiled batch")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120, bbox_inches="tight")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
