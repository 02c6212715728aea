"""Simulator and cost-model speed.

    python benchmarks/bench_simulator.py [--arrivals 1000] [--repeats 3] [--smoke]

Prints, on one core, for the ``sipml`` cost model (PAC-ML's op splitting, the model before the
parallelism strategies) and ``auto`` (data x tensor x pipeline), measured in the same run:
- decisions per second of the PAC-ML setting (``pacml`` cluster, the five PAC-ML graphs, beta
  distribution A, load 0.9, 1,000 arrivals) and of ``dgx8x8`` under para_min and lean, against
  the 1,000/s target and the same simulation with the prediction cache off;
- cost-model evaluations per second on the largest graph (NASNet-A large) at degree 16: cold
  (cache cleared every call) and warm (the per-shape cache), with their ratio;
- the compiled engine (placer.sim.engine, what every run takes since the engine landed) on the same streams against the
  reference simulator above (e897caf's code, measured in the same run): with its prices cold (a fresh cost model and
  no price book: both paths pay the cost model's pricing) and warm (the second and later streams of a cluster), with
  the ratio and the 20,000/s target.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from placer import BetaDistribution, CostModel, Workload, load_cluster, make_heuristic, resolve_graph, simulate
from placer.graphs.catalog import PACML_GRAPHS

TARGET_DECISIONS_PER_S = 1000.0
ENGINE_TARGET_DECISIONS_PER_S = 20_000.0


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


def engine_and_reference(policy: str, arrivals: int, repeats: int, cluster_name: str, warm: bool) -> tuple[float, float]:
    """(engine, reference) decisions per second on bench_simulator's stream (auto cost model), measured alike: ``warm``
    with a cost model (and the engine's price book) that ran another stream of the cluster first, untimed; else each
    repeat from a fresh cost model and no price book."""
    from placer.sim.engine.prices import forget_prices
    from placer.sim.engine.stream import run_program

    cluster = load_cluster(cluster_name)
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    seq = CostModel(cluster).sequential_iteration_s
    workload = Workload(graphs, BetaDistribution("A"), 0.9, cluster.num_devices, arrivals, sequential_iteration_s=seq)

    def engine(cost: CostModel, seed: int) -> None:
        run_program(cost, workload.jobs(np.random.default_rng(seed)), make_heuristic(policy).program())  # type: ignore[arg-type]

    def reference(cost: CostModel, seed: int) -> None:
        simulate(cost, workload.jobs(np.random.default_rng(seed)), make_heuristic(policy).decide)

    rates = []
    for run in (engine, reference):
        forget_prices()
        shared = CostModel(cluster)
        if warm:
            run(shared, repeats)  # another stream of the same regime
        best = float("inf")
        for seed in range(repeats):
            cost = shared if warm else CostModel(cluster)
            if not warm:
                forget_prices()
            start = time.perf_counter()
            run(cost, seed)
            best = min(best, time.perf_counter() - start)
        rates.append(arrivals / best)
    return rates[0], rates[1]


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
    engine_and_reference("lean", 5, 1, "pacml", warm=True)  # load (or compile, once per install) the engine
    for cluster in ("pacml", "dgx8x8"):
        for policy in ("para_min", "lean"):
            for warm in (False, True):
                rate, reference = engine_and_reference(policy, args.arrivals, args.repeats, cluster, warm)
                label = "warm" if warm else "cold"
                print(
                    f"engine,    {cluster:6s} {policy:8s} auto, prices {label}: {rate:7.0f} decisions/s ({rate / reference:.1f}x the "
                    f"reference's {reference:.0f}/s alike; {rate / ENGINE_TARGET_DECISIONS_PER_S:.2f}x the 20,000/s target)"
                )
    for strategy in ("sipml", "auto"):
        cold, warm = cost_evaluations_per_second(1 if args.smoke else 20, strategy)
        print(
            f"cost model {strategy:5s}, nasnetalarge (2502 ops) degree 16 on dgx8x8: cold {cold:7.0f} evals/s, "
            f"cached {warm:9.0f} evals/s ({warm / cold:.0f}x)"
        )


if __name__ == "__main__":
    main()
