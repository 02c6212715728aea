"""The compiled engine against the reference simulator (e897caf's, still in placer.sim.simulator), in the same run.

    python benchmarks/bench_engine.py [--jobs 200] [--streams 4] [--smoke]

Prints, on one core:
- **the tuning stage as `best` runs it** (every candidate of ``BEST_CANDIDATES`` on each tuning stream of one regime:
  ``dgx8x8``, the EDF queue with backfilling, load 0.9, beta C, job lengths spread 100-fold), end to end with one cost
  model per path, as ``placer evaluate`` and the recipe's tuning use it: seconds and the ratio; then the engine's runs
  asked only for tuning's number, as ``Tuning.per_stream`` asks, counted from the arrays against read from the records
  (the better of two runs each, alternated);
- **decisions per second** of ``lean`` on ``dgx8x8`` (bench_simulator's case: PAC-ML's graphs, beta A, load 0.9, the
  loss system) with the cost model's prices cold (a fresh cost model and no price book: the pricing bounds both paths)
  and warm (another stream of the regime run first, untimed, as every stream after a regime's first finds them);
- **the distil stage's environment** (``data/configs/placer.toml``'s, whose observation holds the answers of the recipe's
  seven advisers at every offer): steps per second with random valid actions, the advisers answering in compiled code
  against each answering in Python (the reference), after ``--steps`` untimed steps of each, the better of two runs
  each, alternated, after one untimed run that fills the process's caches for both;
and checks that both paths gave the same records (and the environment the same observations and rewards).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from placer import BetaDistribution, CostModel, Workload, load_cluster, make_heuristic, resolve_graph
from placer.baselines.best import BEST_CANDIDATES, TUNING_METRIC
from placer.baselines.policy import TUNING_SEED, run_metric, run_policy
from placer.common.shipped import data_dir
from placer.envs.advice import Advisers
from placer.envs.env import ClusterPlacementEnv
from placer.graphs.catalog import PACML_GRAPHS
from placer.policies.recipe import load_recipe
from placer.sim.engine.prices import forget_prices
from placer.sim.engine.stream import run_program
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.workloads.generator import SizeDistribution

TARGET_DECISIONS_PER_S = 20_000.0


def _tuning_streams(jobs: int, streams: int) -> tuple[CostModel, list, QueueConfig]:
    """A fresh cost model of ``dgx8x8``, one regime's ``streams`` tuning streams of ``jobs`` jobs and its queue."""
    cluster = load_cluster("dgx8x8")
    cost = CostModel(cluster)
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    size = SizeDistribution("loguniform:0.1:10")
    workload = Workload(graphs, BetaDistribution("C"), 0.9, cluster.num_devices, jobs, sequential_iteration_s=cost.sequential_iteration_s,
                        size=size)  # fmt: skip
    drawn = [list(workload.jobs(np.random.default_rng([TUNING_SEED + k, 0]))) for k in range(streams)]
    forget_prices()  # the engine's prices as cold as the fresh cost model's
    return cost, drawn, QueueConfig.parse("edf-bf")


def tuning_stage(jobs: int, streams: int, engine: bool) -> tuple[float, list]:
    """Seconds to run every ``best`` candidate on ``streams`` tuning streams (a fresh cost model), and the records."""
    cost, drawn, queue = _tuning_streams(jobs, streams)
    records = []
    start = time.perf_counter()
    for name in BEST_CANDIDATES:
        for k, stream in enumerate(drawn):
            policy, rng = make_heuristic(name), np.random.default_rng([TUNING_SEED + k, 1])
            if engine:
                run = run_policy(policy, cost, stream, queue, rng)
            else:
                policy.reset(rng)
                run = simulate(cost, stream, policy.decide, queue=queue)
            records.append(run.records)
    return time.perf_counter() - start, records


def tuning_metric(jobs: int, streams: int, counted: bool) -> tuple[float, list[float]]:
    """Seconds for :func:`tuning_stage`'s runs on the engine asked for tuning's one number (``TUNING_METRIC``) each, as
    ``Tuning.per_stream`` asks: counted from the run's arrays (``run_metric``) or read from the run's records and metrics
    (``run_policy``, before); and the numbers."""
    cost, drawn, queue = _tuning_streams(jobs, streams)
    values = []
    start = time.perf_counter()
    for name in BEST_CANDIDATES:
        for k, stream in enumerate(drawn):
            policy, rng = make_heuristic(name), np.random.default_rng([TUNING_SEED + k, 1])
            if counted:
                values.append(run_metric(policy, cost, stream, queue, rng, TUNING_METRIC))
            else:
                values.append(getattr(run_policy(policy, cost, stream, queue, rng).metrics, TUNING_METRIC))
    return time.perf_counter() - start, values


def decisions_per_second(arrivals: int, engine: bool, warm: bool) -> float:
    cluster = load_cluster("dgx8x8")
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    cost = CostModel(cluster)
    seq = cost.sequential_iteration_s
    workload = Workload(graphs, BetaDistribution("A"), 0.9, cluster.num_devices, arrivals, sequential_iteration_s=seq)
    streams = [list(workload.jobs(np.random.default_rng(seed))) for seed in range(4)]
    forget_prices()

    def once(jobs: list) -> float:
        policy = make_heuristic("lean")
        start = time.perf_counter()
        if engine:
            run_program(cost, jobs, policy.program())  # type: ignore[arg-type]
        else:
            simulate(cost, jobs, policy.decide)
        return time.perf_counter() - start

    if warm:  # prices known: another stream of the regime first, untimed; then three streams apart, each once
        once(streams[3])
        return arrivals / min(once(jobs) for jobs in streams[:3])
    return arrivals / once(streams[0])


def distil_environment(steps: int, compiled: bool) -> tuple[float, list]:
    """Steps per second of the recipe's distil environment, its advisers ``compiled`` or in Python, and what it gave
    (each step's observation digest and reward), after as many steps untimed."""
    recipe = load_recipe(data_dir() / "configs" / "placer.toml", Path(tempfile.gettempdir()) / "bench-engine-recipe")
    config = recipe.distil.config.env
    env = ClusterPlacementEnv(config)
    env.advisers = Advisers(config.advisers, config.max_degree, compiled=compiled)
    env.reset(seed=1)
    rng, seen = np.random.default_rng(0), []

    def go(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            obs, reward, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            seen.append((hash(b"".join(np.ascontiguousarray(v).tobytes() for v in obs.values())), reward))
            if done:
                env.reset()
        return n / (time.perf_counter() - start)

    go(steps)
    return go(steps), seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs per tuning stream")
    parser.add_argument("--streams", type=int, default=4, help="tuning streams (TUNING_STREAMS: 4)")
    parser.add_argument("--arrivals", type=int, default=1000, help="arrivals of the decisions-per-second stream")
    parser.add_argument("--steps", type=int, default=2000, help="environment steps timed (after as many untimed)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks it runs, times nothing worth reading")
    args = parser.parse_args()
    if args.smoke:
        args.jobs, args.streams, args.arrivals, args.steps = 20, 1, 30, 20
    tuning_stage(5, 1, engine=True)  # load (or compile, once per install) the engine before timing it
    reference_s, reference = tuning_stage(args.jobs, args.streams, engine=False)
    engine_s, engine = tuning_stage(args.jobs, args.streams, engine=True)
    runs = len(BEST_CANDIDATES) * args.streams
    print(f"tuning stage ({len(BEST_CANDIDATES)} candidates x {args.streams} streams x {args.jobs} jobs, dgx8x8 edf-bf load 0.9):")
    print(f"  reference {reference_s:6.2f} s, engine {engine_s:6.2f} s: {reference_s / engine_s:.1f}x; same records: {engine == reference}")
    print(f"  ({runs} runs; {runs * args.jobs / engine_s:,.0f} jobs/s through the engine)")
    timed = [tuning_metric(args.jobs, args.streams, counted=counted) for counted in (False, True, False, True)]
    read_s, counted_s = min(t for t, _ in timed[0::2]), min(t for t, _ in timed[1::2])
    print(f"  on the engine, {TUNING_METRIC} per run from records {read_s:5.2f} s, counted from arrays {counted_s:5.2f} s: "
          f"{read_s / counted_s:.2f}x; same values: {timed[0][1] == timed[1][1]}")
    for warm in (False, True):
        ref = decisions_per_second(args.arrivals, engine=False, warm=warm)
        eng = decisions_per_second(args.arrivals, engine=True, warm=warm)
        label = "warm prices" if warm else "cold prices"
        print(
            f"lean on dgx8x8, {label}: reference {ref:7,.0f}/s, engine {eng:7,.0f}/s: {eng / ref:.1f}x "
            f"({eng / TARGET_DECISIONS_PER_S:.2f}x the 20,000/s target)"
        )
    distil_environment(args.steps, compiled=True)  # untimed: the process's caches (prices, tables) filled for both
    runs = [distil_environment(args.steps, compiled=compiled) for compiled in (False, True, False, True)]
    python_rate, compiled_rate = max(r for r, _ in runs[0::2]), max(r for r, _ in runs[1::2])
    python_seen, compiled_seen = runs[0][1], runs[1][1]
    print("distil environment (7 advisers), steps/s:")
    print(f"  advisers in Python {python_rate:6,.0f}, compiled {compiled_rate:6,.0f}: {compiled_rate / python_rate:.2f}x; "
          f"same steps: {python_seen == compiled_seen}")  # fmt: skip


if __name__ == "__main__":
    main()
