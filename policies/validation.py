"""Validation of a policy during and after training: blocking rates on fixed streams, paired with heuristics.

Every policy is run on the same streams (each cluster x queue x size spread x beta distribution
x ``eval_episodes`` seeds, fixed: ``numpy`` seeds ``[10_000 + k, i]``), so differences are paired
per stream and their 95 % intervals are far narrower than those of the rates themselves.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from pydantic import BaseModel

from envs.config import EnvConfig
from placer.baselines.specs import make_heuristic
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.evaluate.stats import mean_ci95, plus_minus
from placer.graphs.catalog import resolve_graph
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload


def validation_rates(decide_factory, env: EnvConfig, episodes: int, discipline: str | None = None) -> np.ndarray:
    """Blocking rate per validation stream (module docstring), in a fixed order.

    ``decide_factory(rng)`` returns a fresh decide function per stream; ``discipline`` (e.g.
    ``edf``) replaces the env's queue discipline (a baseline's own ``@DISCIPLINE``).
    """
    graphs = [resolve_graph(g) for g in env.graphs]
    rates = []
    clusters = map(load_cluster, _names(env.clusters))
    for cluster, queue, size in itertools.product(clusters, _queues(env.queue, discipline), _names(env.size)):
        cost = CostModel(cluster, strategy=env.strategy)
        for i, beta in enumerate(env.beta_dists):
            workload = Workload(
                graphs,
                BetaDistribution(beta),
                env.load,
                cluster.num_devices,
                env.episode_jobs,
                env.arrival,
                None,
                cost.sequential_iteration_s,
                SizeDistribution(size),
            )
            for k in range(episodes):
                decide = decide_factory(np.random.default_rng([10_000 + k, i, 1]))
                run = simulate(cost, workload.jobs(np.random.default_rng([10_000 + k, i])), decide, queue=queue)
                rates.append(run.metrics.blocking_rate)
    return np.array(rates)


def validation_blocking(decide_factory, env: EnvConfig, episodes: int, discipline: str | None = None) -> float:
    """Mean of :func:`validation_rates`."""
    return float(np.mean(validation_rates(decide_factory, env, episodes, discipline)))


def heuristic_factory(name: str, max_degree: int):
    """A decide-function factory for heuristic ``name`` (``NAME@DISCIPLINE`` picks its own queue discipline)."""

    def factory(rng):
        policy = make_heuristic(name.partition("@")[0], max_degree=max_degree)
        policy.reset(rng)
        return policy.decide

    return factory


class PairedRow(BaseModel):
    policy: str
    blocking: float
    blocking_half: float  # 95 % half-width over streams (NaN: one stream)
    minus_learned: float | None  # mean over streams of (this policy's rate - the learned policy's)
    minus_learned_half: float | None


class PairedSummary(BaseModel):
    """The learned policy against its teacher and the heuristics on the same validation streams."""

    streams: int
    teacher: str
    rows: list[PairedRow]

    def lines(self) -> list[str]:
        """A table for the terminal: a positive difference means the learned policy blocks fewer jobs."""
        out = [f"validation, {self.streams} paired streams (blocking rate; difference = baseline - learned, 95 % interval):"]
        width = max(len(r.policy) for r in self.rows) + 2
        for r in self.rows:
            rate = plus_minus(r.blocking, r.blocking_half)
            diff = "" if r.minus_learned is None else f"   {_signed(r.minus_learned, r.minus_learned_half)}  {_verdict(r)}"
            out.append(f"  {r.policy:<{width}}{rate}{diff}")
        return out


def paired_summary(learned_factory, config) -> PairedSummary:
    """Validate the learned policy, its teacher and the configured heuristics on the same streams."""
    env, episodes = config.env.env_config(), config.train.eval_episodes
    teacher = config.train.imitation_teacher
    learned = validation_rates(learned_factory, env, episodes)
    rows = [_row("learned", learned, None)]
    for name in dict.fromkeys([teacher, *config.train.baselines]):
        rates = validation_rates(heuristic_factory(name, env.max_degree), env, episodes, name.partition("@")[2] or None)
        label = f"{name} (teacher)" if name == teacher else name
        rows.append(_row(label, rates, learned))
    return PairedSummary(streams=len(learned), teacher=teacher, rows=rows)


def _row(name: str, rates: np.ndarray, learned: np.ndarray | None) -> PairedRow:
    mean, half = mean_ci95(rates.tolist())
    if learned is None:
        return PairedRow(policy=name, blocking=mean, blocking_half=half, minus_learned=None, minus_learned_half=None)
    diff, diff_half = mean_ci95((rates - learned).tolist())
    return PairedRow(policy=name, blocking=mean, blocking_half=half, minus_learned=diff, minus_learned_half=diff_half)


def _signed(mean: float, half: float) -> str:
    return f"{mean:+.3f} ± " + ("n/a" if math.isnan(half) else f"{half:.3f}")


def _verdict(row: PairedRow) -> str:
    mean, half = row.minus_learned, row.minus_learned_half
    if half is None or math.isnan(half):
        return "(one stream: no interval)"
    if mean - half > 0:
        return "(learned blocks fewer)"
    if mean + half < 0:
        return "(learned blocks more)"
    return "(no difference resolved)"


def _names(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _queues(specs: str | tuple[str, ...], discipline: str | None) -> list[QueueConfig]:
    out = []
    for queue in map(QueueConfig.parse, _names(specs)):
        if discipline and queue.enabled:
            own = QueueConfig.parse(discipline)
            queue = QueueConfig(queue.capacity, own.discipline, own.backfill)
        out.append(queue)
    return out
