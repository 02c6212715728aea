"""Placement rules: which ``degree`` free devices a job gets.

Each rule maps the free devices and a degree to a sorted tuple of device ids, or None if
fewer than ``degree`` devices are free. Rules are deterministic.

- ``first_fit``: the lowest-numbered free devices (PAC-ML's rule).
- ``best_fit``: the fewest servers: the tightest single server that holds the job, else
  servers with the most free devices first (ties to the lower server); within a server, the
  lowest-numbered devices.
- ``spread``: round-robin over servers with free devices, one device per server per round.

:class:`FreeDevices` groups the free devices by server once, so a decision that tries every
degree and rule pays for the grouping once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np

from placer.cluster import Cluster


class FreeDevices:
    """The free devices of a cluster at one moment, grouped by server on first use."""

    def __init__(self, cluster: Cluster, free: np.ndarray) -> None:
        self.cluster = cluster
        self._free = np.flatnonzero(free)
        self.count = len(self._free)

    @cached_property
    def ids(self) -> list[int]:
        return self._free.tolist()

    def first(self, degree: int) -> tuple[int, ...]:
        """The ``degree`` lowest-numbered free devices."""
        return tuple(self._free[:degree].tolist())

    @cached_property
    def by_server(self) -> list[list[int]]:
        """Free device ids of each server that has any, ascending, servers in order (vectorised:
        device ids ascend with their server)."""
        servers = self.cluster.server_of[self._free]
        cuts = np.flatnonzero(np.diff(servers)) + 1
        return [group.tolist() for group in np.split(self._free, cuts)] if self.count else []

    @cached_property
    def largest_first(self) -> list[int]:
        """Free devices, servers with the most free devices first."""
        return [d for group in sorted(self.by_server, key=lambda g: -len(g)) for d in group]

    @cached_property
    def round_robin(self) -> list[int]:
        """Free devices one per server per round."""
        groups = self.by_server
        return [g[r] for r in range(max((len(g) for g in groups), default=0)) for g in groups if r < len(g)]


def _first_fit(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    return free.first(degree) if free.count >= degree else None


def _best_fit(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    if free.count < degree:
        return None
    holders = [g for g in free.by_server if len(g) >= degree]
    if holders:
        return tuple(min(holders, key=len)[:degree])  # min keeps the first (lowest server) on ties
    return tuple(sorted(free.largest_first[:degree]))


def _spread(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    return tuple(sorted(free.round_robin[:degree])) if free.count >= degree else None


PlacementRule = Callable[[FreeDevices, int], "tuple[int, ...] | None"]
PLACEMENT_RULES: dict[str, PlacementRule] = {"first_fit": _first_fit, "best_fit": _best_fit, "spread": _spread}


def first_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _first_fit(FreeDevices(cluster, free), degree)


def best_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _best_fit(FreeDevices(cluster, free), degree)


def spread(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _spread(FreeDevices(cluster, free), degree)
