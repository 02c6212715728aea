"""Run one policy over one job stream: the loop every evaluation shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from placer.cost import CostModel
from placer.sim.metrics import RunMetrics, compute_metrics
from placer.sim.queueing import QueueConfig
from placer.sim.simulator import RebalanceFn, Simulator
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, JobRecord
from placer.workloads.generator import JobSpec

DecideFn = Callable[[Job, ClusterView], Decision]


@dataclass(frozen=True)
class RunResult:
    records: list[JobRecord]
    busy_timeline: list[tuple[float, int]]
    metrics: RunMetrics


def simulate(
    cost: CostModel,
    jobs: Iterable[JobSpec],
    decide: DecideFn,
    on_job: Callable[[], None] | None = None,
    queue: QueueConfig | None = None,
    rebalance: RebalanceFn | None = None,
) -> RunResult:
    """Offer every job to ``decide`` (with ``queue``, at every decision point); ``on_job`` is called once per job decided for good.
    ``rebalance``: an elastic run (:mod:`placer.sim.elastic`), called after completions to resize running jobs."""
    sim = Simulator(cost, jobs, queue=queue, rebalance=rebalance)
    finished = 0
    while (job := sim.next_job()) is not None:
        sim.decide(decide(job, sim.view()))
        if on_job is not None:
            for _ in range(len(sim.records) - finished):
                on_job()
            finished = len(sim.records)
    sim.run()
    metrics = compute_metrics(sim.records, sim.busy_timeline, cost.cluster.num_devices)
    return RunResult(sim.records, sim.busy_timeline, metrics)
