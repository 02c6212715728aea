"""Validation of a policy during and after training: blocking rates on fixed streams, paired with heuristics.

Every policy is run on the same streams (each cluster x queue x size spread x structure x beta distribution
x ``eval_episodes`` seeds, fixed: ``numpy`` seeds ``[10_000 + k, i]``), so differences are paired
per stream and their 95 % intervals are far narrower than those of the rates themselves.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from pydantic import BaseModel

from envs.config import EnvConfig
from placer.baselines.heuristics import BestLean
from placer.baselines.specs import make_heuristic
from placer.baselines.tuning import tuning_blocking, tuning_streams
from placer.cluster.topology import load_cluster
from placer.common.errors import PlacerError
from placer.cost import CostModel
from placer.evaluate.stats import mean_ci95, plus_minus
from placer.graphs.catalog import resolve_graph
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload
from placer.workloads.structure import Structure


def validation_rates(decide_factory, env: EnvConfig, episodes: int, discipline: str | None = None) -> np.ndarray:
    """Blocking rate per validation stream (module docstring), in a fixed order.

    ``decide_factory(rng)`` returns a fresh decide function per stream; ``discipline`` (e.g.
    ``edf``) replaces the env's queue discipline (a baseline's own ``@DISCIPLINE``).
    """
    graphs = [resolve_graph(g) for g in env.graphs]
    rates = []
    clusters = map(load_cluster, _names(env.clusters))
    combos = itertools.product(clusters, _queues(env.queue, discipline), _names(env.size), _names(env.structure))
    for cluster, queue, size, structure in combos:
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
                Structure(structure),
            )
            factory = decide_factory.tuned_for(cost, workload, queue, i) if hasattr(decide_factory, "tuned_for") else decide_factory
            for k in range(episodes):
                jobs = list(workload.jobs(np.random.default_rng([10_000 + k, i])))
                rng = np.random.default_rng([10_000 + k, i, 1])
                decide = factory(rng, jobs) if isinstance(factory, HeuristicFactory) else factory(rng)
                run = simulate(cost, jobs, decide, queue=queue)
                rates.append(run.metrics.blocking_rate)
    return np.array(rates)


def validation_blocking(decide_factory, env: EnvConfig, episodes: int, discipline: str | None = None) -> float:
    """Mean of :func:`validation_rates`."""
    return float(np.mean(validation_rates(decide_factory, env, episodes, discipline)))


class HeuristicFactory:
    """A decide-function factory for heuristic ``name`` (``NAME@DISCIPLINE`` picks its own queue discipline):
    ``HeuristicFactory(name, max_degree)(rng) -> decide``.

    ``lean:admit=best`` is tuned per validation cell (:meth:`tuned_for`) on streams apart from the validation ones.
    """

    def __init__(self, name: str, max_degree: int, admit: float | None = None) -> None:
        self.name, self.max_degree, self.admit = name, max_degree, admit

    def __call__(self, rng, jobs=None):
        """A fresh decide function; ``jobs``, the stream it will decide, is told to a clairvoyant reference (``hindsight``)."""
        policy = make_heuristic(self.name.partition("@")[0], max_degree=self.max_degree)
        if isinstance(policy, BestLean):
            if self.admit is None:
                raise PlacerError(f"{self.name}: tune it on a workload first (tuned_for)")
            policy.admit = self.admit
        policy.reset(rng)
        if hasattr(policy, "foresee"):
            policy.foresee(jobs or ())
        return policy.decide

    def tuned_for(self, cost, workload, queue, beta_index: int):
        policy = make_heuristic(self.name.partition("@")[0], max_degree=self.max_degree)
        if not isinstance(policy, BestLean):
            return self
        admit = policy.choose_admit(tuning_blocking(policy, cost, tuning_streams(workload.jobs, beta_index), queue))
        return HeuristicFactory(self.name, self.max_degree, admit)


class PairedRow(BaseModel):
    policy: str
    blocking: float
    blocking_half: float  # 95 % half-width over streams (NaN: one stream)
    minus_learned: float | None  # mean over streams of (this policy's rate - the learned policy's)
    minus_learned_half: float | None


def online_reference(teacher: str) -> str:
    """The online rule a policy distilled from ``teacher`` must not be worse than: the teacher itself, or
    for the clairvoyant ``hindsight`` (which no online policy can match) the lean rule it plans around."""
    name, _, discipline = teacher.partition("@")
    if not name.startswith("hindsight"):
        return teacher
    base, _, rule = name.partition("+")
    lean = ":".join(p for p in base.split(":")[1:] if p.partition("=")[0] in ("admit", "free", "cap"))
    return "lean" + (":" + lean if lean else "") + ("+" + rule if rule else "") + ("@" + discipline if discipline else "")


class PairedSummary(BaseModel):
    """The learned policy against its teacher and the heuristics on the same validation streams."""

    streams: int
    teacher: str
    reference: str = ""  # the online rule the policy must not be worse than (:func:`online_reference`)
    rows: list[PairedRow]

    def not_worse_than_reference(self) -> bool:
        """True when the learned policy blocks on average no more jobs than :attr:`reference` on the paired streams."""
        row = next(r for r in self.rows if r.policy.removesuffix(" (teacher)") == self.reference)
        return row.minus_learned is not None and row.minus_learned >= 0

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
    reference = online_reference(teacher)
    learned = validation_rates(learned_factory, env, episodes)
    rows = [_row("learned", learned, None)]
    for name in dict.fromkeys([teacher, reference, *config.train.baselines]):
        rates = validation_rates(HeuristicFactory(name, env.max_degree), env, episodes, name.partition("@")[2] or None)
        label = f"{name} (teacher)" if name == teacher else name
        rows.append(_row(label, rates, learned))
    return PairedSummary(streams=len(learned), teacher=teacher, reference=reference, rows=rows)


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
