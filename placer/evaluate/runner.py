"""Offline evaluation: every policy on the same job streams, over beta distributions and seeds.

Seed ``s`` and a beta distribution draw the job stream from ``np.random.default_rng([s, k])`` and
policy randomness from ``np.random.default_rng([s, k, 1])``, ``k`` the distribution's stream key
(0-3 for A-D, else a hash of its spec: :attr:`~placer.workloads.generator.BetaDistribution.stream_key`),
so all policies face exactly the same jobs (common random numbers), reruns are identical, and a
distribution's streams do not depend on where it stands in ``--beta-dist``.
With several loads (``EvaluationConfig.loads``) each load's tasks draw from the same seeds, so a
load's streams are those of an evaluation of that load alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placer.baselines.policy import Policy, Tuning, run_policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.cluster.topology import load_cluster
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.jobs import Row, job_rows
from placer.graphs.catalog import resolve_graph, resolve_graphs
from placer.sim.metrics import blocking_series, utilization_series
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import RunResult
from placer.workloads.generator import JobSpec, Workload, read_trace, trace_load


@dataclass(frozen=True)
class Task:
    """One run of an evaluation: the ``beta_index``-th distribution, ``seed``, the ``policy_index``-th policy and ``load_index``-th load."""

    beta_index: int
    seed: int
    policy_index: int
    load_index: int = 0


def tasks(config: EvaluationConfig) -> list[Task]:
    """Every run of ``config``, in the order results are reported (load by load)."""
    seeds = range(config.first_seed, config.first_seed + config.seeds)
    betas, policies = range(len(config.beta_labels)), range(len(config.policies))
    return [Task(i, seed, k, j) for j in range(len(config.load_values)) for i in betas for seed in seeds for k in policies]


def _no_tuning_streams(_rng: np.random.Generator) -> list[JobSpec]:
    raise PolicyError("a replayed trace has no tuning streams but a --tune-trace")


class Runner:
    """Builds an evaluation's cluster, graphs, policies and cost model once and runs its tasks: the one
    evaluation loop (``placer evaluate``, the training's validation and ``placer bound`` all use it).

    Each task's randomness comes only from its seed and distribution index, so a task gives the
    same result whichever runner runs it, in whatever order: in this process, a process pool or
    a Ray cluster (:mod:`placer.evaluate.parallel`). ``policies`` replaces the policies built from
    ``config.policies`` (e.g. a policy being trained), one per name, in the same order. ``cost``: a cost model of the
    config's cluster and strategy that other runners use too (its caches are exact: sharing changes speed only).
    """

    def __init__(self, config: EvaluationConfig, policies: Sequence[Policy] | None = None, cost: CostModel | None = None) -> None:
        if cost is not None and cost.strategy != config.strategy:
            raise ValueError(f"a cost model of strategy {cost.strategy!r} for an evaluation of strategy {config.strategy!r}")
        self.config = config
        self.cluster = load_cluster(config.cluster) if cost is None else cost.cluster
        self.graphs = resolve_graphs(list(config.workload.graphs) or None, config.graphs_dir)
        if policies is None:
            context = PolicyContext(self.cluster, config.max_degree, Path(config.policy_file) if config.policy_file else None)
            policies = [make_policy(config.spec_of(name), context) for name in config.policies]
        self.policies = list(policies)
        by_name = {g.name: g for g in self.graphs}
        self.trace = read_trace(config.trace, by_name, resolve_graph) if config.trace else None
        self.tune_trace = read_trace(config.tune_trace, by_name, resolve_graph) if config.tune_trace else None
        self.cost = cost or CostModel(self.cluster, strategy=config.strategy)  # caches are exact, so runs may share it
        self.queue = config.workload.queues[0]
        self._tuned: dict[tuple[int, int, int], Policy] = {}  # (policy, beta, load) -> the policy tuned for that workload
        self._tunings: dict[QueueConfig, dict[tuple[int, int], Tuning]] = {}  # queue -> (beta, load) -> its tuning streams

    def workload(self, beta_index: int, load_index: int = 0) -> Workload:
        """The job stream of the ``beta_index``-th beta distribution at the ``load_index``-th load."""
        spec = self.config.workload_at(load_index)
        return spec.stream(self.graphs, spec.betas[beta_index], self.cluster.num_devices, self.cost.sequential_iteration_s)

    def jobs(self, beta_index: int, seed: int, load_index: int = 0) -> list[JobSpec]:
        """The stream of a task: the trace, or the workload's draw from ``np.random.default_rng([seed, key])``, ``key`` the
        distribution's :attr:`~placer.workloads.generator.BetaDistribution.stream_key`."""
        if self.trace is not None:
            return self.trace
        return list(self.workload(beta_index, load_index).jobs(np.random.default_rng([seed, self._stream_key(beta_index)])))

    def run_rng(self, beta_index: int, seed: int) -> np.random.Generator:
        """The generator a policy runs a task's stream with (apart from the stream's own draw)."""
        return np.random.default_rng([seed, self._stream_key(beta_index), 1])

    def _stream_key(self, beta_index: int) -> int:
        return self.config.workload.betas[beta_index].stream_key

    def policy(self, task: Task) -> Policy:
        """The task's policy, tuned for the task's workload on streams apart from the evaluated ones (once per workload)."""
        key = (task.policy_index, task.beta_index, task.load_index)
        if key not in self._tuned:
            policy = self.policies[task.policy_index]
            try:
                self._tuned[key] = policy.tuned(self.tuning(policy.queue(self.queue), task.beta_index, task.load_index))
            except PolicyError:
                if self.trace is None or self.tune_trace is not None:
                    raise
                hint = "on a replayed --trace give it another window to tune on (--tune-trace)"
                raise PolicyError(f"{policy.name} is tuned: {hint}") from None
        return self._tuned[key]

    def tuning(self, queue: QueueConfig, beta_index: int, load_index: int) -> Tuning:
        """The tuning streams of one workload, with every workload of the evaluation as its :attr:`~Tuning.regimes`
        (built once per queue: a heuristic's runs on them are shared by every policy tuned here)."""
        if queue not in self._tunings and self.trace is not None:
            self._tunings[queue] = {(0, 0): self._trace_tuning(queue, self.tune_trace)}
        if queue not in self._tunings:
            regimes = [(i, j) for j in range(len(self.config.load_values)) for i in range(len(self.config.beta_labels))]
            loads = self.config.load_values
            built = {(i, j): Tuning(self.cost, queue, self.workload(i, j).jobs, self._stream_key(i), load=loads[j]) for i, j in regimes}
            every = tuple(built.values())
            for tuning in every:
                tuning.regimes = every  # each knows all, itself among them: one set of runs for every tuner
            self._tunings[queue] = built
        return self._tunings[queue][(beta_index, load_index)]

    def _trace_tuning(self, queue: QueueConfig, jobs: list[JobSpec] | None) -> Tuning:
        """One tuning stream, the replayed tuning trace, at its own offered load (:func:`trace_load`); without one
        (``None``), a tuning of no known load whose streams raise :class:`PolicyError` (a replay's policies are not tuned
        on generated streams): a policy that tunes fails before any tuning run."""
        if jobs is None:
            return Tuning(self.cost, queue, _no_tuning_streams, streams=1, load=None)
        load = trace_load(jobs, self.cost.sequential_jct_s, self.cluster.num_devices)
        return Tuning(self.cost, queue, lambda _rng: jobs, streams=1, load=load)

    def run(self, task: Task, on_job: Callable[[], None] | None = None) -> tuple[dict, dict]:
        """The task's run summary and its timelines."""
        summary, timeline, _ = self._run(task, on_job)
        return summary, timeline

    def run_jobs(self, task: Task, on_job: Callable[[], None] | None = None) -> tuple[dict, dict, list[Row]]:
        """The task's run summary, its timelines and its rows of the per-job table (:mod:`placer.evaluate.jobs`)."""
        summary, timeline, run = self._run(task, on_job)
        key = (summary["policy"], summary["load"], summary["beta_dist"], summary["seed"])
        return summary, timeline, job_rows(run.records, self.cluster.device_name, key)

    def _run(self, task: Task, on_job: Callable[[], None] | None) -> tuple[dict, dict, RunResult]:
        config, i, seed = self.config, task.beta_index, task.seed
        beta, name, policy = config.beta_labels[i], config.policies[task.policy_index], self.policy(task)
        jobs = self.jobs(i, seed, task.load_index)
        run = run_policy(policy, self.cost, jobs, self.queue, self.run_rng(i, seed), on_job)
        m = run.metrics
        load = config.run_loads[task.load_index]  # None on a replayed trace: its arrivals set the load
        summary = {
            "policy": name,
            "seed": seed,
            "beta_dist": beta,
            "load": load,
            "cluster": self.cluster.name,
            **m.to_dict(),
        }
        if (stats := policy.stats()) is not None:  # a policy's own account of the run (lookahead: its deviations from lean)
            summary["policy_stats"] = stats
        times, busy = utilization_series(run.busy_timeline, self.cluster.num_devices, m.window_s)
        blocked_at, blocked = blocking_series(run.records, m.window_s)
        timeline = {
            "policy": name,
            "seed": seed,
            "beta_dist": beta,
            "load": load,
            "time_s": times,
            "busy": busy,
            "blocking_time_s": blocked_at,
            "blocking": blocked,
        }
        return summary, timeline, run
