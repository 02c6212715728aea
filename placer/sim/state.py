"""What the simulator shows a policy (:class:`ClusterView`), how it checks a decision (:func:`check_decision`) and
how it records a job (:func:`job_record`): shared by the reference simulator and the compiled engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placer.cost import CostModel, Prediction
from placer.sim.elastic import RunningJob
from placer.sim.fastest import servable
from placer.sim.queueing import QueueConfig
from placer.sim.types import BlockReason, Decision, Job, JobRecord, Place, Reject, meets_deadline

_LOSS = QueueConfig()


@dataclass(frozen=True)
class ClusterView:
    """A read-only snapshot for policies: which devices are free, when busy ones free up, who waits."""

    cost: CostModel
    now: float
    free: np.ndarray  # (N,) bool
    free_at: np.ndarray  # (N,) seconds (absolute) when each device is next free; ``now`` if free
    running: int  # number of running jobs
    waiting: tuple[Job, ...] = ()  # jobs in the queue, in arrival order (the offered one included)
    queue: QueueConfig = _LOSS
    running_jobs: tuple[RunningJob, ...] = ()  # elastic mode only: every running job, its devices and progress
    elastic: bool = False  # running jobs may be resized (the simulator was handed a rebalance callable)
    # the compiled engine's answers on this snapshot (:class:`~placer.sim.engine.advisers.EngineAdvice`: the advisers'),
    # None on the reference simulator's views; not part of the state a view shows
    engine: Any = field(default=None, compare=False, repr=False)

    @property
    def cluster(self):
        return self.cost.cluster

    @property
    def num_free(self) -> int:
        return int(self.free.sum())


def check_decision(
    cost: CostModel, free: np.ndarray, now: float, job: Job, decision: Decision
) -> tuple[BlockReason | None, float | None, Prediction | None]:
    """Why ``decision`` would block ``job`` at ``now`` on the free devices ``free`` (None if accepted), its JCT, and
    the prediction on its devices once they fit (the cost model asked once)."""
    if isinstance(decision, Reject):
        return BlockReason.REJECTED, None, None
    if not isinstance(decision, Place):
        raise TypeError(f"decision must be Reject or Place, got {decision!r}")
    devices = decision.devices
    n = cost.cluster.num_devices
    if not devices or len(set(devices)) != len(devices) or any(not (0 <= d < n) for d in devices) or not free[list(devices)].all():
        return BlockReason.NO_CAPACITY, None, None
    prediction = cost.predict(job.graph, devices)
    if not prediction.fits:
        return BlockReason.OUT_OF_MEMORY, None, None
    jct = prediction.iteration_s * (job.iterations or job.graph.iterations)  # CostModel.jct_s
    if not meets_deadline(jct, job.remaining_s(now)):
        return BlockReason.DEADLINE, jct, prediction
    return None, jct, prediction


def job_record(
    job: Job,
    outcome,
    reason,
    devices: tuple[int, ...],
    jct,
    finish,
    strategy: str | None = None,
    servers: int = 0,
    wait_s: float = 0.0,
    fastest: float | None = None,
) -> JobRecord:
    fastest = fastest if fastest is not None else job.fastest_jct_s or None  # a snapshot's queued job: what it carries
    return JobRecord(
        job_id=job.job_id,
        graph=job.graph.name,
        arrival_s=job.arrival_s,
        beta=job.beta,
        iterations=job.iterations,
        sequential_jct_s=job.sequential_jct_s,
        deadline_s=job.deadline_s,
        outcome=outcome,
        reason=reason,
        degree=len(devices),
        devices=tuple(int(d) for d in devices),
        jct_s=jct,
        finish_s=finish,
        strategy=strategy,
        servers=servers,
        wait_s=wait_s,
        fastest_jct_s=fastest,
        avoidable=fastest is None or servable(job, fastest),
    )
