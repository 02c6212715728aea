"""Placement rules: which ``degree`` free devices a job gets.

Each rule maps (free mask, degree) to a tuple of device ids, or None if fewer than
``degree`` devices are free. Rules are deterministic.

- ``first_fit``: the lowest-numbered free devices (PAC-ML's rule).
- ``best_fit``: the fewest servers: the tightest single server that holds the job, else
  servers with the most free devices first; within a server, the lowest-numbered devices.
- ``spread``: round-robin over servers with free devices, one device per server per round.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placer.cluster import Cluster

PlacementRule = Callable[[Cluster, np.ndarray, int], "tuple[int, ...] | None"]


def first_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    devices = np.flatnonzero(free)[:degree]
    return tuple(devices.tolist()) if len(devices) == degree else None


def _free_by_server(cluster: Cluster, free: np.ndarray) -> list[np.ndarray]:
    """Free device ids of each server, ascending."""
    devices = np.flatnonzero(free)
    return np.split(devices, np.searchsorted(cluster.server_of[devices], np.arange(1, cluster.num_servers)))


def best_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    if free.sum() < degree:
        return None
    per_server = _free_by_server(cluster, free)
    counts = np.array([len(d) for d in per_server])
    holders = np.flatnonzero(counts >= degree)
    if len(holders):
        tightest = holders[np.argmin(counts[holders])]  # argmin keeps the lowest index on ties
        return tuple(per_server[tightest][:degree].tolist())
    order = np.lexsort((np.arange(len(counts)), -counts))  # most free first, then lowest index
    chosen = np.concatenate([per_server[s] for s in order])[:degree]
    return tuple(np.sort(chosen).tolist())


def spread(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    if free.sum() < degree:
        return None
    devices = np.flatnonzero(free)
    servers = cluster.server_of[devices]
    rank = np.arange(len(devices)) - np.searchsorted(servers, servers)  # position within its server
    order = np.lexsort((servers, rank))  # round by round, servers in order
    return tuple(np.sort(devices[order[:degree]]).tolist())


PLACEMENT_RULES: dict[str, PlacementRule] = {"first_fit": first_fit, "best_fit": best_fit, "spread": spread}
