"""Simulator and cost-model speed.

    python benchmarks/bench_simulator.py [--arrivals 1000] [--repeats 3]

Prints, on one core:
- decisions per second of the PAC-ML setting (``pacml`` cluster, the five PAC-ML graphs, beta
  distribution A, load 0.9, 1,000 arrivals) under para_min and lean, against the 1,000/s target
  and against the same simulation with the schedule cache off (every evaluation rescheduled);
- cost-model evaluations per second on the largest graph (NASNet-A large) at degree 16: cold
  (a list schedule per call, cache cleared) and warm (the per-shape cache), with their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from placer import BetaDistribution, CostModel, Workload, load_cluster, make_heuristic, resolve_graph, simulate
from placer.catalog import PACML_GRAPHS

TARGET_DECISIONS_PER_S = 1000.0


def decisions_per_second(policy: str, arrivals: int, repeats: int, cache: bool = True) -> float:
    cluster = load_cluster("pacml")
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    workload = Workload(graphs, BetaDistribution("A"), 0.9, cluster.num_devices, arrivals)
    best = float("inf")
    for seed in range(repeats):
        heuristic = make_heuristic(policy)
        start = time.perf_counter()
        simulate(CostModel(cluster, cache=cache), workload.jobs(np.random.default_rng(seed)), heuristic.decide)
        best = min(best, time.perf_counter() - start)
    return arrivals / best


def cost_evaluations_per_second(calls: int) -> tuple[float, float]:
    cost = CostModel(load_cluster("pacml"))
    graph = resolve_graph("nasnetalarge")
    devices = list(range(16))
    cost.jct_s(graph, devices)  # compile once
    start = time.perf_counter()
    for _ in range(calls):
        cost._iteration_s.clear()
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
    args = parser.parse_args()
    for policy in ("para_min", "lean"):
        rate = decisions_per_second(policy, args.arrivals, args.repeats)
        baseline = decisions_per_second(policy, args.arrivals, 1, cache=False)
        print(
            f"simulator, pacml, {policy:8s}: {rate:8.0f} decisions/s ({rate / TARGET_DECISIONS_PER_S:.1f}x the 1,000/s target; "
            f"{rate / baseline:.1f}x the same run without the schedule cache, {baseline:.0f}/s)"
        )
    cold, warm = cost_evaluations_per_second(50)
    print(f"cost model, nasnetalarge (2502 ops) degree 16: cold {cold:8.0f} evals/s, cached {warm:10.0f} evals/s ({warm / cold:.0f}x)")


if __name__ == "__main__":
    main()
