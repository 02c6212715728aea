"""Offline evaluation: every policy on the same job streams, over beta distributions and seeds.

Seed ``s`` and the ``i``-th beta distribution draw the job stream from
``np.random.default_rng([s, i])`` and policy randomness from ``np.random.default_rng([s, i, 1])``,
so all policies face exactly the same jobs (common random numbers) and reruns are identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placer.baselines.heuristics import BestLean
from placer.baselines.registry import PolicyContext, make_policy, queue_for
from placer.baselines.tuning import tuning_blocking, tuning_streams
from placer.cluster.topology import load_cluster
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.evaluate.config import EvaluationConfig
from placer.graphs.catalog import resolve_graph, resolve_graphs
from placer.sim.metrics import blocking_series, utilization_series
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload, read_trace
from placer.workloads.structure import Structure


@dataclass(frozen=True)
class Task:
    """One run of an evaluation: the ``beta_index``-th distribution, ``seed``, the ``policy_index``-th policy."""

    beta_index: int
    seed: int
    policy_index: int


def tasks(config: EvaluationConfig) -> list[Task]:
    """Every run of ``config``, in the order results are reported."""
    return [Task(i, seed, k) for i in range(len(config.beta_dists)) for seed in range(config.seeds) for k in range(len(config.policies))]


class Runner:
    """Builds an evaluation's cluster, graphs, policies and cost model once and runs its tasks.

    Each task's randomness comes only from its seed and distribution index, so a task gives the
    same result whichever runner runs it, in whatever order: in this process, a process pool or
    a Ray cluster (:mod:`placer.evaluate.parallel`).
    """

    def __init__(self, config: EvaluationConfig) -> None:
        self.config = config
        self.cluster = load_cluster(config.cluster)
        self.graphs = resolve_graphs(config.graphs or None, config.graphs_dir)
        context = PolicyContext(self.cluster, config.max_degree, Path(config.policy_file) if config.policy_file else None)
        self.policies = [make_policy(spec, context) for spec in config.policies]
        self.trace = read_trace(config.trace, {g.name: g for g in self.graphs}, resolve_graph) if config.trace else None
        self.cost = CostModel(self.cluster, strategy=config.strategy)  # caches are exact, so runs may share it
        self.queue = QueueConfig.parse(config.queue)
        self._tuned: dict[tuple[int, int], dict[float, float]] = {}  # (policy, beta) -> a tuned policy's blocking per setting

    def workload(self, beta: str) -> Workload:
        config = self.config
        return Workload(
            self.graphs,
            BetaDistribution(beta),
            config.load,
            self.cluster.num_devices,
            config.jobs,
            config.arrival,
            config.iterations,
            self.cost.sequential_iteration_s,
            SizeDistribution(config.size),
            Structure(config.structure),
        )

    def _tune(self, policy: BestLean, task: Task) -> None:
        """Fix ``lean:admit=best``'s threshold for this beta distribution on tuning streams (cached)."""
        if self.trace is not None:
            raise PolicyError("lean:admit=best is tuned on generated streams: it cannot run on a replayed --trace")
        key = (task.policy_index, task.beta_index)
        if key not in self._tuned:
            workload = self.workload(self.config.beta_dists[task.beta_index])
            streams = tuning_streams(workload.jobs, task.beta_index)
            self._tuned[key] = tuning_blocking(policy, self.cost, streams, queue_for(policy, self.queue))
        policy.choose_admit(self._tuned[key])

    def run(self, task: Task, on_job: Callable[[], None] | None = None) -> tuple[dict, dict]:
        """The task's run summary and its timelines."""
        config, i, seed = self.config, task.beta_index, task.seed
        beta, spec, policy = config.beta_dists[i], config.policies[task.policy_index], self.policies[task.policy_index]
        if isinstance(policy, BestLean):
            self._tune(policy, task)
        policy.reset(np.random.default_rng([seed, i, 1]))
        jobs = self.trace if self.trace is not None else list(self.workload(beta).jobs(np.random.default_rng([seed, i])))
        if hasattr(policy, "foresee"):  # a clairvoyant reference (hindsight) is told the stream
            policy.foresee(jobs)
        run = simulate(self.cost, jobs, policy.decide, on_job, queue_for(policy, self.queue))
        m = run.metrics
        summary = {"policy": spec, "seed": seed, "beta_dist": beta, "load": config.load, "cluster": self.cluster.name, **m.to_dict()}
        if hasattr(policy, "stats"):  # a planner's own account of the run (lookahead: its deviations from lean)
            summary["policy_stats"] = policy.stats()
        if isinstance(policy, BestLean):
            summary["policy_stats"] = {"admit": policy.admit, "tuning_blocking": self._tuned[task.policy_index, i]}
        times, busy = utilization_series(run.busy_timeline, self.cluster.num_devices, m.window_s)
        blocked_at, blocked = blocking_series(run.records, m.window_s)
        timeline = {
            "policy": spec,
            "seed": seed,
            "beta_dist": beta,
            "time_s": times,
            "busy": busy,
            "blocking_time_s": blocked_at,
            "blocking": blocked,
        }
        return summary, timeline
