"""Elastic jobs: a running job may change its devices (and so its degree) at a decision point.

Off by default: a :class:`~placer.sim.simulator.Simulator` is elastic only when handed a ``rebalance`` callable (an
elastic policy's :meth:`~placer.baselines.policy.Policy.rebalance`); a fixed one refuses every
:class:`~placer.sim.types.Resize` and runs exactly as before. In elastic mode a policy moves running jobs in two places:
with the decision that admits a job (:attr:`Place.resizes <placer.sim.types.Place.resizes>`, applied first, all at
once: devices taken back to admit it), and after completions (``rebalance(view)``: devices handed out).

A resize at time ``t`` of a job that has done ``k`` of its ``I`` iterations (progress is continuous: iterations done =
those done when it last (re)started computing + the seconds since over its iteration time) pauses it for
:func:`resize_pause_s` (checkpoint, restart, re-shard: the cluster's ``[resize]`` table, scaled by the job's parameter
bytes) on its new devices, which it holds from ``t``; it then runs its ``I - k`` remaining iterations at the new
placement's iteration time, so it finishes at ``t + pause + (I - k) x iteration``. Devices it no longer uses are free at
``t``. A resize onto the same devices is nothing (no pause); onto as many other devices it is a migration (a pause).
A resize must keep the job's deadline (its arrival + beta x sequential JCT): the simulator refuses one that would not,
as it refuses a start that would not (:class:`ResizeError`), so an accepted job still always meets its deadline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from placer.cluster.topology import Cluster
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.types import Job, JobRecord, Resize, meets_deadline


class ResizeError(PolicyError):
    """A policy asked for a resize the simulator cannot carry out: not in elastic mode, a job not running, devices
    busy, unknown, repeated or too small for it, or a deadline the resized job would miss."""


def resize_pause_s(cluster: Cluster, graph: JobGraph) -> float:
    """Seconds a job of ``graph`` makes no progress when resized on ``cluster``: its ``[resize]`` table's restart plus
    writing and reading back the checkpoint (:meth:`~placer.cluster.topology.ResizeCost.pause_s`)."""
    return cluster.spec.resize_cost.pause_s(graph.parameter_bytes)


@dataclass(frozen=True)
class RunningJob:
    """A running job as the simulator tracks it in elastic mode (and an elastic policy sees it in
    :attr:`ClusterView.running_jobs <placer.sim.state.ClusterView.running_jobs>`). Times are absolute seconds."""

    job: Job
    devices: tuple[int, ...]
    iteration_s: float  # seconds per iteration on ``devices``
    started_s: float  # when it first started
    resumed_s: float  # when it (re)starts computing on ``devices``: ``started_s``, or the end of its last resize's pause
    done: float  # iterations done by ``resumed_s``
    finish_s: float
    since_s: float  # when it took ``devices`` (its start or its last resize)
    resizes: int = 0
    pause_s: float = 0.0  # seconds its resizes paused it, in all
    held_device_s: float = 0.0  # device-seconds it held before ``since_s``, on earlier devices

    @property
    def degree(self) -> int:
        return len(self.devices)

    @property
    def device_s(self) -> float:
        """Device-seconds it holds from its start to ``finish_s`` if nothing changes."""
        return self.held_device_s + self.degree * (self.finish_s - self.since_s)

    def record(self, record: JobRecord) -> JobRecord:
        """The job's ``record`` told its new finish, JCT (start to finish), resizes, their pause and device-seconds."""
        return replace(
            record,
            jct_s=self.finish_s - self.started_s,
            finish_s=self.finish_s,
            resizes=self.resizes,
            resize_pause_s=self.pause_s,
            resized_device_s=self.device_s,
        )

    def iterations_done(self, now: float) -> float:
        """Iterations done by ``now`` (fractional; none while paused)."""
        return min(float(self.job.iterations), self.done + max(0.0, now - self.resumed_s) / self.iteration_s)

    def remaining(self, now: float) -> float:
        """Iterations left at ``now``."""
        return self.job.iterations - self.iterations_done(now)

    def finish_if_resized(self, now: float, iteration_s: float, pause_s: float) -> float:
        """When it would finish if resized at ``now`` onto devices of ``iteration_s`` seconds per iteration, paused
        ``pause_s`` seconds."""
        return now + pause_s + self.remaining(now) * iteration_s

    def resized(self, now: float, devices: tuple[int, ...], iteration_s: float, pause_s: float) -> RunningJob:
        """Itself moved at ``now`` onto ``devices`` (``iteration_s`` per iteration there), paused ``pause_s`` seconds."""
        return replace(
            self,
            devices=devices,
            iteration_s=iteration_s,
            resumed_s=now + pause_s,
            done=self.iterations_done(now),
            finish_s=self.finish_if_resized(now, iteration_s, pause_s),
            since_s=now,
            resizes=self.resizes + 1,
            pause_s=self.pause_s + pause_s,
            held_device_s=self.held_device_s + self.degree * (now - self.since_s),
        )


def start(job: Job, devices: tuple[int, ...], iteration_s: float, now: float, finish_s: float) -> RunningJob:
    """The state of ``job`` started at ``now`` on ``devices``, finishing at ``finish_s`` (the simulator's own JCT)."""
    return RunningJob(job, devices, iteration_s, now, now, 0.0, finish_s, now)


def plan_resizes(
    cost: CostModel, free: np.ndarray, running: Mapping[int, RunningJob], resizes: Iterable[Resize], now: float
) -> dict[int, RunningJob]:
    """The new state of every job ``resizes`` changes, checked all at once against the free devices ``free`` (the
    resized jobs' own devices count as free), or :class:`ResizeError`. Nothing is changed here."""
    resizes = list(resizes)
    ids = [r.job_id for r in resizes]
    if len(set(ids)) != len(ids):
        raise ResizeError(f"a job resized twice at once: {ids}")
    missing = [i for i in ids if i not in running]
    if missing:
        raise ResizeError(f"resize of jobs that are not running: {missing}")
    available = free.copy()
    for r in resizes:
        available[list(running[r.job_id].devices)] = True
    n, taken, out = len(free), set[int](), {}
    for r in resizes:
        old, devices = running[r.job_id], tuple(int(d) for d in r.devices)
        if not devices or len(set(devices)) != len(devices) or any(not 0 <= d < n for d in devices):
            raise ResizeError(f"job {r.job_id}: devices {devices} are empty, repeated or unknown")
        if taken & set(devices) or not available[list(devices)].all():
            raise ResizeError(f"job {r.job_id}: devices {devices} are not free")
        taken |= set(devices)
        if set(devices) == set(old.devices):
            continue  # the same devices: nothing happens
        prediction = cost.predict(old.job.graph, devices)
        if not prediction.fits:
            raise ResizeError(f"job {r.job_id}: a shard does not fit in memory on {devices}")
        new = old.resized(now, devices, prediction.iteration_s, resize_pause_s(cost.cluster, old.job.graph))
        if not meets_deadline(new.finish_s - now, old.job.remaining_s(now)):
            raise ResizeError(f"job {r.job_id}: resized onto {devices} it would finish at {new.finish_s:.6g} s, after its deadline")
        out[r.job_id] = new
    return out
