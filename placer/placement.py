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


def _free_by_server(cluster: Cluster, free: np.ndarray) -> list[list[int]]:
    return [[d for d in devices if free[d]] for devices in cluster.devices_of_server]


def best_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    if free.sum() < degree:
        return None
    per_server = _free_by_server(cluster, free)
    holders = [s for s, devs in enumerate(per_server) if len(devs) >= degree]
    if holders:
        tightest = min(holders, key=lambda s: (len(per_server[s]), s))
        return tuple(per_server[tightest][:degree])
    chosen: list[int] = []
    for s in sorted(range(len(per_server)), key=lambda s: (-len(per_server[s]), s)):
        chosen.extend(per_server[s][: degree - len(chosen)])
        if len(chosen) == degree:
            break
    return tuple(sorted(chosen))


def spread(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    if free.sum() < degree:
        return None
    per_server = [devs for devs in _free_by_server(cluster, free) if devs]
    chosen: list[int] = []
    for round_ in range(max(len(d) for d in per_server)):
        for devs in per_server:
            if round_ < len(devs) and len(chosen) < degree:
                chosen.append(devs[round_])
    return tuple(sorted(chosen))


PLACEMENT_RULES: dict[str, PlacementRule] = {"first_fit": first_fit, "best_fit": best_fit, "spread": spread}
