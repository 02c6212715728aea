"""Resizing a running job in the service: ``POST /v1/jobs/{id}/resize`` and ``GET /v1/jobs/{id}/resize-proposal``.

A resize names a ``degree`` (the service picks the devices: the fastest placement of that many devices among the job's
own and the idle ones, the one keeping most of its own devices among equally fast ones) or the ``devices`` themselves.
Only the job's owner (or an admin) may resize it: others get the 404 of an unknown job; a job whose lease ran out gets
410. The new devices must be free for the job (its own count as free: :class:`DevicesBusyError`, 409) and hold the
job's graph at the new degree (the cost model's memory check that placement uses: :class:`DoesNotFitError`, 422). The
answer gives the new placement, its predicted step time and the pause of the move
(:func:`placer.sim.elastic.resize_pause_s`: the cluster's ``[resize]`` table for the job's graph); the reservation's
devices are swapped in the state file in one transaction with the idempotency answer, before anyone hears of it.

The service keeps no deadline per job, so a resize is not held to one; ``predicted_jct_s`` is from the reservation to
the predicted finish: the time so far, the pause, then what was left at the old step time, scaled to the new one.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING

import numpy as np

from placer.cluster.placement import PLACEMENT_RULES
from placer.cost.prediction import Prediction
from placer.graphs.job_graph import JobGraph
from placer.serve.errors import DevicesBusyError, DoesNotFitError, InvalidRequestError
from placer.serve.schemas import ResizeDecision, ResizeRequest, RunningJob
from placer.serve.tenants import DEFAULT_TENANT, Tenant
from placer.sim.elastic import resize_pause_s

if TYPE_CHECKING:
    from placer.serve.occupancy import Occupancy

RULES = tuple(PLACEMENT_RULES)


def resize(
    state: Occupancy, job_id: str, request: ResizeRequest, idempotency_key: str | None = None, tenant: Tenant = DEFAULT_TENANT
) -> ResizeDecision:
    """Move ``tenant``'s running job ``job_id`` to ``request``'s degree or devices (module docstring). A repeated
    ``idempotency_key`` (the tenant's) with the same job and request gets the first answer, also after a restart."""
    key = None if idempotency_key is None else tenant.scoped(idempotency_key)
    digest = hashlib.sha256(f"resize {job_id} {request.model_dump_json()}".encode()).hexdigest()
    with state.lock:
        if key is not None and (first := state.stored_answer(key, digest, idempotency_key, ResizeDecision)) is not None:
            return first
        job, graph = state.owned(job_id, tenant)
        own = tuple(state.cluster.device_index[d] for d in job.devices)
        devices = _requested(state, job, graph, own, request)
        decision = _decision(state, job, graph, own, devices)
        answer = None if key is None else (key, digest, decision.model_dump_json())
        if decision.moved or answer is not None:
            state.move(job_id, tuple(decision.devices), decision.predicted_jct_s, answer)
    return decision


def proposal(state: Occupancy, job_id: str, tenant: Tenant = DEFAULT_TENANT) -> ResizeDecision:
    """What :func:`resize` would do for the degree at which ``tenant``'s job ``job_id`` would finish earliest, on its own
    and the idle devices, pause included (its own devices when no move gains time, ``moved`` false): degrees of powers
    of two, its own and all it could hold, so a proposal prices a few dozen placements at most. Nothing changes."""
    with state.lock:
        job, graph = state.owned(job_id, tenant)
        own = tuple(state.cluster.device_index[d] for d in job.devices)
        free = _free_for(state, job_id)
        best = _decision(state, job, graph, own, own)
        for degree in sorted({len(own), int(free.sum()), *(2**k for k in range(int(free.sum()).bit_length()))}):
            devices = _fastest(state, graph, own, free, degree)
            if devices is not None and set(devices) != set(own):
                candidate = _decision(state, job, graph, own, devices)
                if candidate.predicted_jct_s < best.predicted_jct_s:
                    best = candidate
        return best


def _free_for(state: Occupancy, job_id: str) -> np.ndarray:
    """Devices free for ``job_id``: the idle ones and its own."""
    return np.array([h is None or h == job_id for h in state.holder])


def _requested(state: Occupancy, job: RunningJob, graph: JobGraph, own: tuple[int, ...], request: ResizeRequest) -> tuple[int, ...]:
    """The device ids ``request`` moves ``job`` to, checked free for it and holding its graph."""
    cluster, free = state.cluster, _free_for(state, job.job_id)
    if request.devices is not None:
        unknown = [d for d in request.devices if d not in cluster.device_index]
        if unknown:
            raise InvalidRequestError(f"unknown devices {', '.join(repr(d[:64]) for d in unknown[:5])} (GET /v1/cluster lists them)")
        devices = tuple(cluster.device_index[d] for d in request.devices)
        busy = [cluster.device_name(d) for d in devices if not free[d]]
        if busy:
            raise DevicesBusyError(f"devices {', '.join(busy[:8])} are held by another job")
        if not _prediction(state, graph, devices).fits:
            raise DoesNotFitError(f"job {job.job_id!r}: graph {graph.name!r} does not fit on {', '.join(request.devices[:8])}")
        return devices
    degree = request.degree or len(own)
    if degree > cluster.num_devices:
        raise InvalidRequestError(f"degree {degree}: the cluster has {cluster.num_devices} devices")
    if degree > free.sum():
        raise DevicesBusyError(f"degree {degree}: job {job.job_id!r} has {int(free.sum())} devices free for it (its own and the idle)")
    if degree == len(own):
        return own  # the same degree: it stays where it is
    chosen = _fastest(state, graph, own, free, degree)
    if chosen is None:
        raise DoesNotFitError(f"job {job.job_id!r}: graph {graph.name!r} fits on no placement of {degree} devices free for it")
    return chosen


def _fastest(state: Occupancy, graph: JobGraph, own: tuple[int, ...], free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    """The fastest placement of ``degree`` devices among ``free`` that holds ``graph`` (None: none does): the placement
    rules' on the free devices, on the job's own devices (shrinking) or its own plus the rules' on the others (growing);
    among equally fast ones, the one keeping most of its own devices."""
    mask = np.zeros(len(free), dtype=bool)
    mask[list(own)] = True
    candidates = {e.devices for e in state.cost.placements(free, [degree], RULES) if e.devices is not None}
    if degree <= len(own):
        candidates |= {e.devices for e in state.cost.placements(mask, [degree], RULES) if e.devices is not None}
    else:
        others = free & ~mask
        candidates |= {own + e.devices for e in state.cost.placements(others, [degree - len(own)], RULES) if e.devices is not None}
    fitting = [(_prediction(state, graph, d).iteration_s, -len(set(d) & set(own)), d) for d in candidates]
    fitting = [c for c in fitting if _prediction(state, graph, c[2]).fits]
    return min(fitting)[2] if fitting else None


def _prediction(state: Occupancy, graph: JobGraph, devices: tuple[int, ...]) -> Prediction:
    return state.cost.predict(graph, tuple(sorted(devices)))


def _decision(state: Occupancy, job: RunningJob, graph: JobGraph, own: tuple[int, ...], devices: tuple[int, ...]) -> ResizeDecision:
    """``job`` moved from ``own`` to ``devices``: the prediction there, the pause, the predicted JCT."""
    before, after = _prediction(state, graph, own), _prediction(state, graph, devices)
    moved = set(devices) != set(own)
    pause = resize_pause_s(state.cluster, graph) if moved else 0.0
    now = state.clock.wall()
    ratio = after.iteration_s / before.iteration_s if 0 < before.iteration_s < math.inf else 1.0
    left_s = max(job.reserved_at_s + job.predicted_jct_s - now, 0.0) * ratio
    names = [state.cluster.device_name(d) for d in devices] if moved else list(job.devices)
    return ResizeDecision(
        job_id=job.job_id,
        graph=job.graph,
        degree=len(devices),
        devices=names,
        previous_devices=list(job.devices),
        moved=moved,
        predicted_iteration_s=after.iteration_s,
        previous_iteration_s=before.iteration_s,
        resize_pause_s=pause,
        predicted_jct_s=max(now - job.reserved_at_s, 0.0) + pause + left_s if moved else job.predicted_jct_s,
        strategy=after.strategy.as_dict() if after.strategy else None,
    )
