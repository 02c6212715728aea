"""Placement queries: how far to partition a job, where to put it, when it will finish.

    decision = placer.place(graph, "pacml", beta=0.3)
    decision.accepted, decision.degree, decision.devices, decision.predicted_jct_s, decision.strategy
    prediction = placer.predict(graph, "dgx8x8", 8)   # or a list of device names
    prediction.iteration_s, prediction.strategy, prediction.memory_per_device_bytes, prediction.fits

The wire format of ``placer place`` and ``POST /v1/placements`` is :class:`PlacementDecision`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections import Counter
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from placer.baselines.registry import Policy, PolicyContext, make_policy
from placer.cluster.placement import PLACEMENT_RULES, best_fit, first_fit, spread
from placer.cluster.topology import Cluster, load_cluster
from placer.common.errors import PlacerError
from placer.common.lru import LRUCache
from placer.cost import CostModel, Prediction
from placer.graphs.job_graph import JobGraph
from placer.sim.options import DEFAULT_MAX_DEGREE, degrees_for, options
from placer.sim.simulator import ClusterView
from placer.sim.types import Job, Place

Reason = Literal["does_not_fit", "deadline_unreachable", "policy_declined"]

_QUERY_IDS = itertools.count()  # policies that learn the workload online (size quantiles) see each query as one job


class ClusterState(BaseModel):
    """Occupancy: busy devices by name (``s<server>-g<index>``) with seconds until each frees."""

    model_config = ConfigDict(extra="forbid")
    busy: dict[str, float | None] = Field(default_factory=dict, description="device name -> seconds until free (null: unknown)")


class PlacementDecision(BaseModel):
    accepted: bool
    job_id: str | None = None
    graph_key: str | None = Field(default=None, description="content key of the job graph (the service accepts it in place of the graph)")
    degree: int = Field(description="partitioning degree; 0 when no placement is possible")
    devices: list[str] = Field(description="device of each shard, by name")
    predicted_iteration_s: float | None
    predicted_jct_s: float | None = Field(description="of the placement chosen, or of the fastest possible one when rejected")
    sequential_jct_s: float
    deadline_s: float
    meets_deadline: bool
    reason: Reason | None = None
    policy: str
    strategy: dict[str, int] | None = Field(
        default=None, description='how the job is split, e.g. {"dp": 4, "tp": 2, "pp": 1} or {"sipml": 8}'
    )
    memory_per_device_bytes: float | None = None
    comm_s: float | None = Field(default=None, description="seconds per iteration that communication adds")


class PlacementPrediction(BaseModel):
    """What the cost model predicts for a job on a set of devices (``placer predict``)."""

    graph: str
    cluster: str
    devices: list[str]
    device_types: dict[str, int] = Field(description="how many of the devices are of each type")
    degree: int
    servers: int
    strategy: dict[str, int] | None = Field(description="the fastest split that fits (or the fastest at all when none fits)")
    iteration_s: float
    jct_s: float
    sequential_jct_s: float
    speedup: float = Field(description="sequential JCT / JCT")
    scaling_efficiency: float = Field(description="speedup / degree")
    memory_per_device_bytes: float
    memory_capacity_bytes: float
    fits: bool
    comm_s: float
    data_loading_s: float
    micro_batches: int
    batch_size: int | None
    precision: str | None
    profiled_on: dict[str, str] | None
    extrapolated: bool = Field(False, description="the placement spans more servers than any the cluster was calibrated on")
    calibrated_max_servers: int | None = Field(None, description="the most servers a calibration row spanned (null: not calibrated)")
    interval_s: list[float] | None = Field(
        None, description="iteration_s -/+ the calibration's 90th-percentile error with each placement shape left out (null: none)"
    )


def occupancy(cluster: Cluster, state: ClusterState | None) -> tuple[np.ndarray, np.ndarray]:
    """(free mask, seconds until free) arrays from a :class:`ClusterState`."""
    free = np.ones(cluster.num_devices, dtype=bool)
    free_in = np.zeros(cluster.num_devices)
    for name, seconds in (state.busy if state else {}).items():
        if name not in cluster.device_index:
            raise PlacerError(f"unknown device {name!r} in cluster state (devices are named like {cluster.device_name(0)!r})")
        if seconds is not None and not (np.isfinite(seconds) and seconds >= 0):
            raise PlacerError(f"device {name!r}: seconds until free must be finite and >= 0, got {seconds}")
        free[cluster.device_index[name]] = False
        free_in[cluster.device_index[name]] = seconds if seconds is not None else 0.0
    return free, free_in


def decide(
    graph: JobGraph,
    cost: CostModel,
    free: np.ndarray,
    free_in: np.ndarray,
    policy: Policy,
    *,
    beta: float,
    iterations: int | None = None,
    running: int = 0,
    max_degree: int = DEFAULT_MAX_DEGREE,
) -> PlacementDecision:
    """Ask ``policy`` about one job on a cluster with the given occupancy (nothing is reserved)."""
    if not (isinstance(beta, int | float) and 0 < beta <= 1):
        raise PlacerError(f"beta must be in (0, 1], got {beta!r}")
    _check_iterations(iterations)
    iterations = iterations or graph.iterations
    cluster = cost.cluster
    seq = cost.sequential_jct_s(graph, iterations)
    job = Job(next(_QUERY_IDS), graph, 0.0, float(beta), iterations, seq)  # a new job each query (online size statistics)
    view = ClusterView(cost, 0.0, free, free_in, running)
    choice = policy.decide(job, view)
    common = {"sequential_jct_s": seq, "deadline_s": job.deadline_s, "policy": getattr(policy, "name", "") or "", "graph_key": graph.key}
    if isinstance(choice, Place) and choice.devices:
        prediction = cost.predict(graph, choice.devices)
        jct = prediction.iteration_s * iterations if prediction.fits else None
        ok = jct is not None and jct <= job.deadline_s * (1 + 1e-9) and bool(free[list(choice.devices)].all())
        if ok:
            return PlacementDecision(
                accepted=True,
                degree=len(choice.devices),
                devices=[cluster.device_name(d) for d in choice.devices],
                predicted_iteration_s=jct / iterations,
                predicted_jct_s=jct,
                meets_deadline=True,
                strategy=prediction.strategy.as_dict(),
                memory_per_device_bytes=prediction.memory_per_device_bytes,
                comm_s=prediction.comm_s,
                **common,
            )
    table = options(job, view, degrees=degrees_for(view, max_degree), rules=tuple(PLACEMENT_RULES))
    fitting = [o for o in table if o.fits]
    fastest = min(fitting, key=lambda o: (o.jct_s, o.degree), default=None)
    if fastest is None:
        reason = "does_not_fit"
    elif not any(o.feasible for o in table):
        reason = "deadline_unreachable"
    else:
        reason = "policy_declined"
    return PlacementDecision(
        accepted=False,
        degree=0,
        devices=[],
        predicted_iteration_s=fastest.jct_s / iterations if fastest else None,
        predicted_jct_s=fastest.jct_s if fastest else None,
        meets_deadline=False,
        reason=reason,
        **common,
    )


def place(
    graph: JobGraph,
    cluster: Cluster | str,
    state: ClusterState | dict | None = None,
    policy: Policy | str = "lean",
    *,
    beta: float = 1.0,
    iterations: int | None = None,
    policy_file: str | None = None,
    strategy: str = "auto",
) -> PlacementDecision:
    """Decide degree and devices for ``graph`` on ``cluster`` (a :class:`Cluster` or preset/file).

    ``state`` gives the busy devices; ``policy`` is a policy name (a heuristic, or ``learned``
    with ``policy_file``) or object. Returns the typed decision; on rejection ``reason`` says
    why: ``does_not_fit`` (no free devices or memory for any degree), ``deadline_unreachable``
    (it fits, but never within beta x sequential JCT), ``policy_declined``. ``strategy``: the
    cost model's (``auto``, ``dp``, ``tp``, ``pp`` or ``sipml``; see :mod:`placer.cost`).
    """
    if isinstance(state, dict):
        state = ClusterState.model_validate(state)
    if isinstance(cluster, str):
        cost = _cost_model(cluster, _mtime(cluster), strategy)
    else:
        cost = CostModel(cluster, strategy=strategy)
    if isinstance(policy, str):
        policy = _policy(policy, cost.cluster, policy_file, _mtime(policy_file))
    free, free_in = occupancy(cost.cluster, state)
    return decide(graph, cost, free, free_in, policy, beta=beta, iterations=iterations)


# ``place`` with names keeps what it loaded (a cluster's cost model with its caches, a policy) and
# reloads only when the file behind a name changes.
_LOADED: LRUCache[tuple, object] = LRUCache(32)


def _mtime(source: str | None) -> float | None:
    try:
        return os.stat(source).st_mtime if source else None
    except OSError:
        return None  # a preset name, or a file that does not exist (loading it reports that)


def _cost_model(cluster: str, mtime: float | None, strategy: str) -> CostModel:
    key = ("cost", cluster, mtime, strategy)
    cost = _LOADED.get(key)
    if cost is None:
        cost = _LOADED[key] = CostModel(load_cluster(cluster), strategy=strategy)
    return cost


def _policy(spec: str, cluster: Cluster, policy_file: str | None, mtime: float | None) -> Policy:
    key = ("policy", spec, id(cluster), policy_file, mtime)
    policy = _LOADED.get(key)
    if policy is None:
        policy = _LOADED[key] = make_policy(spec, PolicyContext(cluster, policy_file=Path(policy_file) if policy_file else None))
    return policy


def predict(
    graph: JobGraph,
    cluster: Cluster | str,
    devices_or_degree: int | list[str],
    *,
    strategy: str = "auto",
    iterations: int | None = None,
) -> PlacementPrediction:
    """The cost model's prediction for ``graph`` on ``cluster``.

    ``devices_or_degree``: device names (``s<server>-g<index>``), or a degree: then the fastest
    placement of that many devices on the idle cluster among those the placement rules give, on
    the whole cluster and on each device type alone (``device_types`` in the answer says which
    types it got). ``strategy``: ``auto`` (the fastest
    data x tensor x pipeline factorisation that fits), ``dp``, ``tp``, ``pp`` or ``sipml``.
    """
    _check_iterations(iterations)
    cluster = load_cluster(cluster) if isinstance(cluster, str) else cluster
    cost = CostModel(cluster, strategy=strategy)
    if isinstance(devices_or_degree, int) and not isinstance(devices_or_degree, bool):
        devices, p = _fastest_placement(cluster, cost, graph, devices_or_degree)
    else:
        devices = _devices(cluster, devices_or_degree)
        p = cost.predict(graph, devices)
    iterations = iterations or graph.iterations
    seq = cost.sequential_jct_s(graph, iterations)
    jct = p.iteration_s * iterations
    return PlacementPrediction(
        graph=graph.name,
        cluster=cluster.name,
        devices=[cluster.device_name(d) for d in devices],
        device_types=dict(Counter(cluster.device_type[d] for d in devices)),
        degree=len(devices),
        servers=len(set(cluster.server_of[list(devices)].tolist())),
        strategy=p.strategy.as_dict() if p.strategy else None,
        iteration_s=p.iteration_s,
        jct_s=jct,
        sequential_jct_s=seq,
        speedup=seq / jct,
        scaling_efficiency=seq / jct / len(devices),
        memory_per_device_bytes=p.memory_per_device_bytes,
        memory_capacity_bytes=p.memory_capacity_bytes,
        fits=p.fits,
        comm_s=p.comm_s,
        data_loading_s=p.data_loading_s,
        micro_batches=p.micro_batches,
        batch_size=graph.batch_size,
        precision=graph.precision,
        profiled_on={"device": graph.profiled_on[0], "precision": graph.profiled_on[1]} if graph.profiled_on else None,
        **extrapolation(cluster, len(set(cluster.server_of[list(devices)].tolist())), p.iteration_s),
    )


def extrapolation(cluster: Cluster, servers: int, iteration_s: float) -> dict:
    """``extrapolated``, ``calibrated_max_servers`` and ``interval_s`` of a prediction on ``servers`` servers.

    The interval is the calibration's 90th-percentile cross-validated error (each placement shape left
    out), widened in proportion to the servers beyond the most calibrated on: a heuristic, not a
    measured coverage. Uncalibrated clusters (no ``[calibrated]``) get no flag and no interval.
    """
    calibrated = cluster.spec.calibrated
    if calibrated is None:
        return {}
    out: dict = {"extrapolated": servers > calibrated.max_servers, "calibrated_max_servers": calibrated.max_servers}
    if calibrated.cv_p90 is not None and math.isfinite(iteration_s):
        width = calibrated.cv_p90 * max(1.0, servers / calibrated.max_servers)
        out["interval_s"] = [iteration_s / (1 + width), iteration_s / max(1 - width, 0.1)]
    return out


def _check_iterations(iterations: int | None) -> None:
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise PlacerError(f"iterations must be an integer >= 1, got {iterations!r}")


def _fastest_placement(cluster: Cluster, cost: CostModel, graph: JobGraph, degree: int) -> tuple[tuple[int, ...], Prediction]:
    """Of the placements the rules give on the idle cluster and on each device type alone: the fastest that fits."""
    if not 1 <= degree <= cluster.num_devices:
        raise PlacerError(f"degree must be between 1 and {cluster.num_devices} on {cluster.name!r}, got {degree}")
    kinds = np.asarray(cluster.device_type)
    masks = [np.ones(cluster.num_devices, dtype=bool)] + [kinds == t for t in sorted(set(cluster.device_type))]
    candidates = {rule(cluster, mask, degree) for mask in masks for rule in (best_fit, first_fit, spread)} - {None}
    scored = [(devices, cost.predict(graph, devices)) for devices in sorted(candidates)]
    return min(scored, key=lambda pair: (not pair[1].fits, pair[1].iteration_s, len(set(cluster.server_of[list(pair[0])]))))


def _devices(cluster: Cluster, names: list[str]) -> tuple[int, ...]:
    names = list(names)
    unknown = [n for n in names if n not in cluster.device_index]
    if not names or unknown or len(set(names)) != len(names):
        raise PlacerError(f"devices must be distinct known device names (like {cluster.device_name(0)!r}); bad: {unknown or names}")
    return tuple(sorted(cluster.device_index[n] for n in names))
