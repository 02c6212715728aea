"""Simulator and cost-model speed.

    python benchmarks/bench_simulator.py [--arrivals 1000] [--repeats 3] [--smoke]

Prints, on one core, for the ``sipml`` cost model (PAC-ML's op splitting, the model before the
parallelism strategies) and ``auto`` (data x tensor x pipeline), measured in the same run:
- decisions per second of the PAC-ML setting (``pacml`` cluster, the five PAC-ML graphs, beta
  distribution A, load 0.9, 1,000 arrivals) and of ``dgx8x8`` under para_min and lean, against
  the 1,000/s target and the same simulation with the prediction cache off;
- cost-model evaluations per second on the largest graph (NASNet-A large) at degree 16: cold
  (cache cleared every call) and warm (the per-shape cache), with their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from placer import BetaDistribution, CostModel, Workload, load_cluster, make_heuristic, resolve_graph, simulate
from placer.graphs.catalog import PACML_GRAPHS

TARGET_DECISIONS_PER_S = 1000.0


def decisions_per_second(policy: str, arrivals: int, repeats: int, strategy: str, cluster_name: str = "pacml", cache: bool = True) -> float:
    cluster = load_cluster(cluster_name)
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    seq = CostModel(cluster, strategy=strategy).sequential_iteration_s
    workload = Workload(graphs, BetaDistribution("A"), 0.9, cluster.num_devices, arrivals, sequential_iteration_s=seq)
    best = float("inf")
    for seed in range(repeats):
        heuristic = make_heuristic(policy)
        start = time.perf_counter()
        simulate(CostModel(cluster, strategy=strategy, cache=cache), workload.jobs(np.random.default_rng(seed)), heuristic.decide)
        best = min(best, time.perf_counter() - start)
    return arrivals / best


def cost_evaluations_per_second(calls: int, strategy: str) -> tuple[float, float]:
    cost = CostModel(load_cluster("dgx8x8"), strategy=strategy)
    graph = resolve_graph("nasnetalarge")
    devices = list(range(16))
    cost.jct_s(graph, devices)  # compile once
    start = time.perf_counter()
    for _ in range(calls):
        cost._predictions.clear()
        cost.jct_s(graph, devices)
    cold = calls / (time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(calls * 100):
        cost.jct_s(graph, devices)
    warm = calls * 100 / (time.perf_counter() - start)
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arrivals", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="20 arrivals, one repeat: checks it runs, times nothing worth reading")
    args = parser.parse_args()
    if args.smoke:
        args.arrivals, args.repeats = 20, 1
    rates = {}
    for cluster in ("pacml", "dgx8x8"):
        for policy in ("para_min", "lean"):
            for strategy in ("sipml", "auto"):
                rate = rates[cluster, policy, strategy] = decisions_per_second(policy, args.arrivals, args.repeats, strategy, cluster)
                baseline = decisions_per_second(policy, args.arrivals, 1, strategy, cluster, cache=False)
                versus = f"; {rate / rates[cluster, policy, 'sipml']:.2f}x sipml" if strategy == "auto" else ""
                print(
                    f"simulator, {cluster:6s} {policy:8s} {strategy:5s}: {rate:7.0f} decisions/s "
                    f"({rate / TARGET_DECISIONS_PER_S:.1f}x the 1,000/s target; {rate / baseline:.1f}x without the cache, "
                    f"{baseline:.0f}/s{versus})"
                )
    for strategy in ("sipml", "auto"):
        cold, warm = cost_evaluations_per_second(1 if args.smoke else 20, strategy)
        print(
            f"cost model {strategy:5s}, nasnetalarge (2502 ops) degree 16 on dgx8x8: cold {cold:7.0f} evals/s, "
            f"cached {warm:9.0f} evals/s ({warm / cold:.0f}x)"
        )


if __name__ == "__main__":
    main()
