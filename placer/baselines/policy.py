"""The policy interface every policy implements, with its optional hooks declared once.

A policy decides one offer at a time (``decide(job, view)``); the hooks have no-op defaults, so
callers never probe for them: ``reset`` (a new run), ``foresee`` (told the whole stream: only a
clairvoyant reference uses it), ``tuned`` (fitted to a workload on streams apart from the evaluated
ones), ``stats`` (its own account of a run), ``screen`` with ``observe_screened`` (a policy that rejects unasked what
it cannot place feasibly: the engine rejects those offers for it and tells it) and ``estimates`` (a planner's cost of
each candidate it weighed at the last offer, for soft imitation targets) and ``rebalance`` (an elastic policy's resizes of running
jobs after completions; a policy is elastic when it sets :attr:`Policy.elastic`, and only then runs in an elastic
simulator, :mod:`placer.sim.elastic`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec
from placer.cluster.topology import Cluster
from placer.cost import CostModel
from placer.sim.engine.program import Program, external
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import RunResult, simulate
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Resize
from placer.workloads.generator import JobSpec

TUNING_SEED = 1_000_000  # tuning stream k of beta distribution i: np.random.default_rng([TUNING_SEED + k, i])
TUNING_STREAMS = 4


class Policy:
    """Base of every policy (heuristics, planners, the learned policy). ``spec`` is its parsed name."""

    spec: PolicySpec | None = None
    elastic: ClassVar[bool] = False  # resizes running jobs: its runs are elastic (placer.sim.elastic); off for every fixed policy

    @property
    def name(self) -> str:
        return str(self.spec) if self.spec is not None else type(self).__name__.lower()

    def reset(self, rng: np.random.Generator) -> None:
        """Start a new run: forget what the last run taught, draw randomness from ``rng``."""

    def decide(self, job: Job, view: ClusterView) -> Decision:
        raise NotImplementedError

    def rebalance(self, view: ClusterView) -> Sequence[Resize]:
        """An elastic policy's resizes of running jobs after the completions of an instant (none by default)."""
        return ()

    def foresee(self, jobs: Sequence[JobSpec]) -> None:
        """Told the stream this run will decide (after ``reset``); online policies ignore it."""

    def tuned(self, tuning: Tuning) -> Policy:
        """This policy fitted to the workload of ``tuning`` (itself, if it has nothing to tune)."""
        return self

    def stats(self) -> dict[str, Any] | None:
        """The policy's own account of the run since ``reset`` (None: nothing to say)."""
        return None

    def estimates(self) -> Sequence[tuple[Decision, float]]:
        """A planner's candidates at the last offer with their estimated cost (jobs blocked); empty for rules."""
        return ()

    def screen(self, cluster: Cluster) -> tuple[int, tuple[str, ...]] | None:
        """``(max_degree, rules)`` where, on ``cluster``, this policy rejects every offer with no feasible option at
        degrees 1..max_degree x ``rules`` (devices free, memory fits, deadline met) and does nothing else there but what
        :meth:`observe_screened` does: the compiled engine then rejects those offers itself, unasked
        (:func:`~placer.sim.engine.program.external`). None (the default): asked at every offer."""
        return None

    def observe_screened(self, jobs: Sequence[Job], log: np.ndarray, view: ClusterView) -> None:
        """Take in the offers the engine rejected for this policy since it last decided (:meth:`screen`): ``jobs`` in
        order, ``log`` their rows of :meth:`~placer.sim.engine.stream.Stream.screened`, ``view`` the engine's current
        one; as :meth:`decide` would have at each."""

    def program(self) -> Program | None:
        """The rule-based program that decides as this policy does, for the compiled engine (None: none does, the
        reference simulator runs it)."""
        return None

    def queue(self, queue: QueueConfig) -> QueueConfig:
        """The queue a run of this policy uses: ``queue`` in the discipline the policy's name asks for (``@edf``)."""
        return self.spec.queue(queue) if self.spec is not None else queue


def run_policy(
    policy: Policy,
    cost: CostModel,
    jobs: Sequence[JobSpec],
    queue: QueueConfig,
    rng: np.random.Generator,
    on_job: Callable[[], None] | None = None,
) -> RunResult:
    """One run of ``policy`` on ``jobs``: reset with ``rng``, told the stream (a clairvoyant reference uses it), simulated."""
    policy.reset(rng)
    policy.foresee(jobs)
    return _run_reset(policy, cost, jobs, queue, on_job)


def run_metric(
    policy: Policy, cost: CostModel, jobs: Sequence[JobSpec], queue: QueueConfig, rng: np.random.Generator, metric: str
) -> float:
    """``run_policy(policy, cost, jobs, queue, rng).metrics.<metric>``; a rule the engine runs alone, asked for a metric it
    counts from the run's arrays (:data:`~placer.sim.engine.stream.METRICS_FROM_ARRAYS`), builds no records."""
    from placer.sim.engine.stream import METRICS_FROM_ARRAYS, program_metric, supported  # numba loads with the first run

    policy.reset(rng)
    policy.foresee(jobs)
    program = policy.program() if metric in METRICS_FROM_ARRAYS and not policy.elastic else None
    if program is not None and supported(cost, jobs, program):
        return program_metric(cost, jobs, program, policy.queue(queue), metric)
    return float(getattr(_run_reset(policy, cost, jobs, queue, None).metrics, metric))


def _run_reset(
    policy: Policy, cost: CostModel, jobs: Sequence[JobSpec], queue: QueueConfig, on_job: Callable[[], None] | None
) -> RunResult:
    """:func:`run_policy` of a policy already reset and told the stream."""
    if not policy.elastic:
        from placer.sim.engine.stream import run_program, supported  # numba loads with the first run

        screen = policy.screen(cost.cluster)
        program = policy.program() or external(cost.cluster.num_devices, screen)
        if supported(cost, jobs, program):
            told = policy.observe_screened if screen is not None else None
            return run_program(cost, jobs, program, policy.queue(queue), policy.decide, on_job, told)
    return simulate(cost, jobs, policy.decide, on_job, policy.queue(queue), policy.rebalance if policy.elastic else None)


def named_by_spec(policy: Policy) -> bool:
    """True for a heuristic with nothing to tune: its name alone decides what it does, so its runs may be remembered."""
    return policy.spec is not None and policy.spec.kind in HEURISTIC_KINDS and type(policy).tuned is Policy.tuned


@dataclass
class Tuning:
    """Where a policy is tuned: the cost model, the queue, and ``streams`` tuning streams of one
    workload drawn by ``draw(rng)`` with seeds no evaluation or validation uses (``[TUNING_SEED + k, beta_key]``, ``beta_key``
    the beta distribution's stream key), and its offered ``load`` where known.

    ``regimes``: the tunings of every workload of the evaluation this one belongs to (each load and beta distribution,
    this one among them), for a policy tuned once over all of them (``single-best``); empty when tuned alone.
    """

    cost: CostModel
    queue: QueueConfig
    draw: Callable[[np.random.Generator], Iterable[JobSpec]]
    beta_key: int = 0
    streams: int = TUNING_STREAMS
    load: float | None = None  # the workload's offered load, where known (adaptive tunes a member per load)
    regimes: tuple[Tuning, ...] = field(default=(), repr=False, compare=False)
    _measured: dict[tuple[str, str], tuple[float, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def pooled(self) -> tuple[Tuning, ...]:
        """The workloads a pooled choice is made over: :attr:`regimes`, or this one alone."""
        return self.regimes or (self,)

    @cached_property
    def jobs(self) -> list[list[JobSpec]]:
        """The tuning streams (drawn once)."""
        return [list(self.draw(np.random.default_rng([TUNING_SEED + k, self.beta_key]))) for k in range(self.streams)]

    def blocking(self, policy: Policy, metric: str = "blocking_rate") -> float:
        """Mean ``metric`` (a :class:`~placer.sim.metrics.RunMetrics` field; default the blocking rate) of ``policy`` over the
        tuning streams (stream ``k`` run with rng ``[TUNING_SEED + k, 1]``)."""
        return float(np.mean(self.per_stream(policy, metric)))

    def per_stream(self, policy: Policy, metric: str = "blocking_rate") -> tuple[float, ...]:
        """(streams,) ``metric`` of ``policy`` on each tuning stream, in stream order (paired across policies); a heuristic
        named by its spec alone runs once per metric."""
        key = (policy.name, metric) if named_by_spec(policy) else None
        if key is not None and key in self._measured:
            return self._measured[key]
        rngs = (np.random.default_rng([TUNING_SEED + k, 1]) for k in range(self.streams))
        values = tuple(run_metric(policy, self.cost, jobs, self.queue, rng, metric) for jobs, rng in zip(self.jobs, rngs, strict=True))
        if key is not None:
            self._measured[key] = values
        return values
