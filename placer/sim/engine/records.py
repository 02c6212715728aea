"""A run's records read back from the engine's arrays (:class:`~placer.sim.engine.stream.Arrays`) as the reference
simulator's :class:`~placer.sim.types.JobRecord` s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from placer.sim.types import BlockReason, JobRecord, Outcome
from placer.workloads.generator import JobSpec

from . import codes as k
from .prices import PriceBook

if TYPE_CHECKING:
    from .stream import Arrays

_REASONS = (
    BlockReason.REJECTED, BlockReason.NO_CAPACITY, BlockReason.OUT_OF_MEMORY, BlockReason.DEADLINE, BlockReason.QUEUE_FULL,
    BlockReason.EXPIRED,
)  # fmt: skip


def avoidable(c: Arrays, jobs: np.ndarray | slice = slice(None)) -> np.ndarray:
    """(jobs,) bool: each job's (of ``jobs``: all by default) :func:`~placer.sim.fastest.servable` (its fastest placement
    on the idle cluster, started at arrival, meets its deadline), elementwise in the reference's float operations and
    order."""
    arrival, deadline = c.arrival[jobs], c.beta[jobs] * c.seq_jct[jobs]
    return arrival + deadline - c.fastest[jobs] >= arrival - 1e-9 * np.maximum(1.0, deadline)


def job_records(specs: list[JobSpec], book: PriceBook, c: Arrays, start: int, n: int) -> list[JobRecord]:
    """Records ``start``..``n`` of a run's arrays, as the reference's :class:`JobRecord` s."""
    if n <= start:
        return []
    rows = slice(start, n)
    jobs = c.rec_job[rows]
    accepted = (c.rec_outcome[rows] == k.ACCEPTED).tolist()
    seq, fastest, beta = c.seq_jct[jobs], c.fastest[jobs], c.beta[jobs]
    columns = zip(
        jobs.tolist(), accepted, seq.tolist(), fastest.tolist(), (beta * seq).tolist(), avoidable(c, jobs).tolist(),
        c.rec_reason[rows].tolist(), c.rec_deg[rows].tolist(), c.rec_jct[rows].tolist(), c.rec_finish[rows].tolist(),
        c.rec_shape[rows].tolist(), c.rec_wait[rows].tolist(), c.graph[jobs].tolist(), c.rec_dev[rows].tolist(),
        strict=True,
    )  # fmt: skip
    out = []
    for j, ok, seq_s, fastest_s, deadline_s, servable_, reason, degree, jct, finish, shape, wait, g, devices in columns:
        spec = specs[j]
        out.append(
            JobRecord(
                job_id=j, graph=spec.graph.name, arrival_s=spec.arrival_s, beta=spec.beta, iterations=spec.iterations,
                sequential_jct_s=seq_s, deadline_s=deadline_s, outcome=Outcome.ACCEPTED if ok else Outcome.BLOCKED,
                reason=None if ok else _REASONS[reason], degree=degree, devices=tuple(devices[:degree]),
                jct_s=jct if ok else None, finish_s=finish if ok else None,
                strategy=book.labels.get((g, shape)) if ok else None, servers=int(book.servers[shape]) if ok else 0,
                wait_s=wait, fastest_jct_s=fastest_s, avoidable=servable_,
            )  # fmt: skip
        )
    return out
