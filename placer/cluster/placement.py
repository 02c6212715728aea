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

import bisect
import itertools
from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

from placer.cluster.topology import Cluster

PREFIX = 16  # orders are built this far at once: the degrees a decision tries
SMALL = 64  # up to this many servers with free devices, plain Python beats numpy's call overhead
SMALL_DEVICES = 256


class FreeDevices:
    """The free devices of a cluster at one moment, grouped by server once (numpy, any cluster size).

    Device ids ascend with their server, so a server's free devices are one run of ``ids``:
    ``servers[k]`` has ``counts[k]`` free devices starting at ``ids[starts[k]]``.
    """

    def __init__(self, cluster: Cluster, free: np.ndarray) -> None:
        self.cluster = cluster
        self._free = np.flatnonzero(free)
        self.count = len(self._free)
        self._largest: list[int] = []  # prefixes of the two orders, grown on demand
        self._rounds: list[int] = []

    @cached_property
    def ids(self) -> list[int]:
        return self._free.tolist()

    def first(self, degree: int) -> tuple[int, ...]:
        """The ``degree`` lowest-numbered free devices."""
        return tuple(self.ids[:degree])

    @cached_property
    def _runs(self) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
        """(starts, counts) of each server's run of free devices, as arrays and as lists."""
        if self.count <= SMALL_DEVICES:  # a plain loop beats numpy's per-call overhead here
            server_of, starts, counts, last = self.cluster.server_list, [], [], -1
            for i, device in enumerate(self.ids):
                if server_of[device] != last:
                    last = server_of[device]
                    starts.append(i)
                    counts.append(0)
                counts[-1] += 1
            return np.array(starts, dtype=np.int64), np.array(counts, dtype=np.int64), starts, counts
        server = self.cluster.server_of[self._free]
        run_starts = np.concatenate(([0], np.flatnonzero(np.diff(server)) + 1))
        run_counts = np.diff(np.append(run_starts, self.count))
        return run_starts, run_counts, run_starts.tolist(), run_counts.tolist()

    @property
    def starts(self) -> np.ndarray:
        return self._runs[0]

    @property
    def counts(self) -> np.ndarray:
        return self._runs[1]

    @property
    def _starts(self) -> list[int]:
        return self._runs[2]

    @property
    def _counts(self) -> list[int]:
        return self._runs[3]

    @property
    def runs(self) -> tuple[list[int], list[int]]:
        """(starts, counts) of each server with free devices, as lists: the ``k``-th one's are ``ids[starts[k]:][:counts[k]]``."""
        return self._runs[2], self._runs[3]

    def group(self, k: int, take: int | None = None) -> list[int]:
        """The first ``take`` (all) free devices of the ``k``-th server that has any."""
        start, count = self._starts[k], self._counts[k]
        return self.ids[start : start + (count if take is None else min(take, count))]

    @property
    def by_server(self) -> list[list[int]]:
        """Free device ids of each server that has any, ascending, servers in order."""
        return [self.group(k) for k in range(len(self._counts))]

    @cached_property
    def _by_count(self) -> tuple[list[int], list[int]]:
        """Server indices sorted by free devices, then index, and those counts (numpy beyond a few servers)."""
        if len(self._counts) <= SMALL:
            pairs = sorted(zip(self._counts, range(len(self._counts)), strict=True))
            return [k for _, k in pairs], [c for c, _ in pairs]
        order = np.lexsort((np.arange(len(self.counts)), self.counts))
        return order.tolist(), self.counts[order].tolist()

    def tightest_holder(self, degree: int) -> int | None:
        """The server (its index among those with free devices) with the fewest free devices >= ``degree``; ties to the lower."""
        order, counts = self._by_count
        i = bisect.bisect_left(counts, degree)
        return order[i] if i < len(order) else None

    @cached_property
    def _by_size(self) -> list[int]:
        """Server indices, most free devices first, then index."""
        if len(self._counts) <= SMALL:
            return [k for _, k in sorted(zip((-c for c in self._counts), range(len(self._counts)), strict=True))]
        return np.lexsort((np.arange(len(self.counts)), -self.counts)).tolist()

    def largest_first(self, degree: int) -> list[int]:
        """The first ``degree`` free devices taking servers with the most free devices first."""
        if len(self._largest) < degree:
            want, self._largest = max(degree, PREFIX), []
            for k in self._by_size:
                self._largest += self.group(k, want - len(self._largest))
                if len(self._largest) >= want:
                    break
        return self._largest[:degree]

    def round_robin(self, degree: int) -> list[int]:
        """The first ``degree`` free devices taking one per server per round, servers in order."""
        if len(self._rounds) < degree:
            want = min(max(degree, PREFIX), self.count)
            self._rounds, depth = [self.ids[i] for i in self._starts[:want]], 1  # the first round: each server's first
            while len(self._rounds) < want:
                servers = itertools.islice((k for k, c in enumerate(self._counts) if c > depth), want - len(self._rounds))
                self._rounds += [self.ids[self._starts[k] + depth] for k in servers]
                depth += 1
        return self._rounds[:degree]


def _first_fit(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    return free.first(degree) if free.count >= degree else None


def _best_fit(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    if free.count < degree:
        return None
    k = free.tightest_holder(degree)
    if k is not None:
        return tuple(free.group(k, degree))
    return tuple(sorted(free.largest_first(degree)))


def _spread(free: FreeDevices, degree: int) -> tuple[int, ...] | None:
    return tuple(sorted(free.round_robin(degree))) if free.count >= degree else None


PlacementRule = Callable[[FreeDevices, int], "tuple[int, ...] | None"]
PLACEMENT_RULES: dict[str, PlacementRule] = {"first_fit": _first_fit, "best_fit": _best_fit, "spread": _spread}
DEFAULT_RULE = "first_fit"  # a heuristic's rule when its name gives none (``+RULE``)


def rule_indices(starts: Sequence[int], counts: Sequence[int], rule: str, degrees: Sequence[int]) -> list[tuple[int, ...] | None]:
    """What ``PLACEMENT_RULES[rule]`` gives at each of ``degrees`` on a mask whose servers with free devices have
    ``counts`` free, their runs of the ascending free ids starting at ``starts``: as ascending indices into those ids
    (None: fewer than ``degree`` free). Every rule takes a server's lowest-numbered free devices, so these indices hold
    for every mask with the same counts (:class:`FreeDevices`' rules, on counts alone)."""
    everything = tuple(range(sum(counts)))
    if rule == "first_fit":
        return [everything[:degree] if degree <= len(everything) else None for degree in degrees]
    if rule == "best_fit":
        return _best_fit_indices(starts, counts, everything, degrees)
    if rule == "spread":
        top = max((d for d in degrees if d <= len(everything)), default=0)
        rounds: list[int] = []  # one free device per server per round, servers in order
        depth = 0
        while len(rounds) < top:
            rounds += [start + depth for start, count in zip(starts, counts, strict=True) if count > depth]
            depth += 1
        prefixes = _sorted_prefixes(rounds[:top], 1)
        return [prefixes[degree] if degree <= len(everything) else None for degree in degrees]
    raise ValueError(f"unknown placement rule {rule!r}")


def _best_fit_indices(
    starts: Sequence[int], counts: Sequence[int], everything: tuple[int, ...], degrees: Sequence[int]
) -> list[tuple[int, ...] | None]:
    """:func:`rule_indices` of ``best_fit``: the tightest server that holds the job (ties to the lower), else the servers
    with the most free devices first (ties to the lower)."""
    pairs = sorted(zip(counts, range(len(counts)), strict=True))
    ascending = [c for c, _ in pairs]
    holders = [bisect.bisect_left(ascending, degree) for degree in degrees]
    spread_over = [d for d, i in zip(degrees, holders, strict=True) if i == len(counts) and d <= len(everything)]
    prefixes: dict[int, tuple[int, ...]] = {}
    if spread_over:
        largest: list[int] = []
        for _, k in sorted(zip((-c for c in counts), range(len(counts)), strict=True)):
            largest += everything[starts[k] : starts[k] + counts[k]]
            if len(largest) >= max(spread_over):
                break
        prefixes = _sorted_prefixes(largest[: max(spread_over)], min(spread_over))
    out: list[tuple[int, ...] | None] = []
    for degree, i in zip(degrees, holders, strict=True):
        if degree > len(everything):
            out.append(None)
        elif i < len(counts):
            start = starts[pairs[i][1]]
            out.append(everything[start : start + degree])
        else:
            out.append(prefixes[degree])
    return out


def _sorted_prefixes(order: list[int], start: int) -> dict[int, tuple[int, ...]]:
    """{d: tuple(sorted(order[:d]))} for d = ``start`` .. len(order), one insertion each."""
    ascending = sorted(order[: start - 1])
    prefixes: dict[int, tuple[int, ...]] = {}
    for d in range(start, len(order) + 1):
        bisect.insort(ascending, order[d - 1])
        prefixes[d] = tuple(ascending)
    return prefixes


def idle_placements(cluster: Cluster, degree: int) -> list[tuple[int, ...]]:
    """Every placement of ``degree`` devices that a rule of :data:`PLACEMENT_RULES` gives on the idle ``cluster``: on all its
    devices and, where it has several device types, on each type's devices alone (no rule reaches a fast type's devices
    past slower ones on the whole cluster); each once, sorted. Empty when the cluster has fewer than ``degree`` devices."""
    types = sorted(set(cluster.device_type))
    masks = [np.ones(cluster.num_devices, dtype=bool)]
    if len(types) > 1:
        kinds = np.asarray(cluster.device_type)
        masks += [kinds == t for t in types]
    frees = [FreeDevices(cluster, mask) for mask in masks]
    return sorted({devices for free in frees for rule in PLACEMENT_RULES.values() if (devices := rule(free, degree)) is not None})


def first_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _first_fit(FreeDevices(cluster, free), degree)


def best_fit(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _best_fit(FreeDevices(cluster, free), degree)


def spread(cluster: Cluster, free: np.ndarray, degree: int) -> tuple[int, ...] | None:
    return _spread(FreeDevices(cluster, free), degree)
