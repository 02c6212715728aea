"""Placement queries: how far to partition a job, where to put it, when it will finish.

    decision = placer.place(graph, "pacml", beta=0.3)
    decision.accepted, decision.degree, decision.devices, decision.predicted_jct_s, decision.strategy
    prediction = placer.predict(graph, "dgx8x8", 8)   # or a list of device names
    prediction.iteration_s, prediction.strategy, prediction.memory_per_device_bytes, prediction.fits

:func:`place` is a function of its arguments: each call asks a policy with a fresh state. A
:class:`~placer.api.session.Placer` keeps one policy across queries (online statistics).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from placer.api.session import Placer, check_iterations, extrapolation
from placer.api.types import ClusterState, PlacementDecision, PlacementPrediction
from placer.baselines.policy import Policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.cluster.topology import Cluster, load_cluster
from placer.common.errors import QueryError
from placer.common.lru import LRUCache
from placer.cost import CostModel, Prediction
from placer.graphs.job_graph import JobGraph
from placer.sim.fastest import fastest_idle_placement


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

    The same arguments get the same answer: the policy is reset before it decides (a policy
    object passed in loses what it learned online; keep one in a :class:`Placer` instead).
    """
    if isinstance(cluster, str):
        cost = _cost_model(cluster, _mtime(cluster), strategy)
    else:
        cost = CostModel(cluster, strategy=strategy)
    guard: AbstractContextManager = nullcontext()
    if isinstance(policy, str):
        policy, guard = _policy(policy, cost.cluster, policy_file, _mtime(policy_file))
    with guard:  # a loaded policy is shared by the calls naming it: one at a time resets and asks it
        return Placer(cost, policy).place(graph, state, beta=beta, iterations=iterations)


# ``place`` with names keeps what it loaded (a cluster's cost model with its caches, a policy with
# its weights) and reloads only when the file behind a name changes. What a policy learns online
# is not kept: each call resets it.
_COST_MODELS: LRUCache[tuple, CostModel] = LRUCache(16)
_POLICIES: LRUCache[tuple, tuple[Cluster, Policy, threading.Lock]] = LRUCache(16)


def _mtime(source: str | None) -> float | None:
    try:
        return os.stat(source).st_mtime if source else None
    except OSError:
        return None  # a preset name, or a file that does not exist (loading it reports that)


def _cost_model(cluster: str, mtime: float | None, strategy: str) -> CostModel:
    key = ("cost", cluster, mtime, strategy)
    cost = _COST_MODELS.get(key)
    if cost is None:
        cost = _COST_MODELS[key] = CostModel(load_cluster(cluster), strategy=strategy)
    return cost


def _policy(spec: str, cluster: Cluster, policy_file: str | None, mtime: float | None) -> tuple[Policy, threading.Lock]:
    """The policy of ``spec`` for ``cluster`` (loaded once) and the lock its users take."""
    key = ("policy", spec, id(cluster), policy_file, mtime)
    loaded = _POLICIES.get(key)
    if loaded is None or loaded[0] is not cluster:  # the entry holds its cluster: an id reused by another is no match
        policy = make_policy(spec, PolicyContext(cluster, policy_file=Path(policy_file) if policy_file else None))
        loaded = _POLICIES[key] = (cluster, policy, threading.Lock())
    return loaded[1], loaded[2]


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
    check_iterations(iterations)
    cluster = load_cluster(cluster) if isinstance(cluster, str) else cluster
    cost = CostModel(cluster, strategy=strategy)
    if isinstance(devices_or_degree, bool):
        raise QueryError(f"devices_or_degree must be a degree or device names, got {devices_or_degree!r}")
    if isinstance(devices_or_degree, int):
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


def _fastest_placement(cluster: Cluster, cost: CostModel, graph: JobGraph, degree: int) -> tuple[tuple[int, ...], Prediction]:
    """The fastest placement of ``degree`` devices on the idle cluster (:func:`~placer.sim.simulator.fastest_idle_placement`)."""
    fastest = fastest_idle_placement(cost, graph, degree) if 1 <= degree <= cluster.num_devices else None
    if fastest is None:
        raise QueryError(f"degree must be between 1 and {cluster.num_devices} on {cluster.name!r}, got {degree}")
    return fastest


def _devices(cluster: Cluster, names: list[str]) -> tuple[int, ...]:
    names = list(names)
    unknown = [n for n in names if n not in cluster.device_index]
    if not names or unknown or len(set(names)) != len(names):
        raise QueryError(f"devices must be distinct known device names (like {cluster.device_name(0)!r}); bad: {unknown or names}")
    return tuple(sorted(cluster.device_index[n] for n in names))
