"""Placement shapes and tables, memoised (:class:`Placements`, the cost model's).

A placement's :class:`PlacementShape` is memoised per device tuple; equal shapes are one interned object. A placement
table holds every (degree, rule) placement of a free-device mask; it is kept per *free counts*, the free devices of
each server that has any (in server order; with each server's id unless every device and every server is alike):
every rule takes a server's lowest-numbered free devices (:func:`~placer.cluster.placement.rule_indices`), so every mask
with the same counts gives the same table of shapes, and each placement's devices are the same places in its free ids.
Far fewer counts recur than masks (a cluster of single-device servers has one per number of free devices), so a table
and each graph's predictions on it (``predicted``, ``best``; filled by the cost model) are mostly found, not built.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from placer.cluster.placement import FreeDevices, rule_indices
from placer.cluster.topology import Cluster
from placer.common.lru import LRUCache
from placer.cost.prediction import Prediction
from placer.cost.shape import PlacementShape

MAX_SHAPES = 200_000
MAX_TABLES = 2048  # tables by free counts
MAX_MASKS = 16_384  # free-device mask -> its free counts (a table's key)
MAX_DEVICE_TABLES = 1024  # a mask's table with its devices (:meth:`Placements.entries`)
MAX_TABLE_GRAPHS = 512  # graphs whose predictions a table keeps (least recently used out; the cost model's max_graphs)
DERIVED_PER_GRAPH = 4  # a table's ``derived`` entries per graph it keeps


class PlacementEntry(NamedTuple):
    """One (degree, rule) placement of :meth:`placer.cost.CostModel.placements`."""

    degree: int
    rule: str
    devices: tuple[int, ...] | None
    shape: PlacementShape | None
    repeat: bool


class PlacementTable:
    """Every (degree, rule) placement on the masks with one free count, degree-major (entry ``i`` is ``degrees[i // R]``,
    ``rules[i % R]``): ``indices[i]`` its devices' places among a mask's free ids, ascending (None: fewer than the degree
    free), ``slots[i]`` its shape's place in ``shapes`` (the distinct shapes, first seen first; -1 without devices),
    ``repeats[i]`` whether an earlier rule gave the same devices at that degree, ``breaks[i]`` the wholly free servers it
    takes devices from. ``num_free`` and ``whole`` (wholly free servers) describe the masks. ``predicted`` / ``best``:
    graph key -> its predictions on ``shapes`` / its fastest fitting iteration (s); ``derived``: what callers compute
    from the table, by their own key. Those three are :class:`~placer.common.lru.LRUCache` mappings (``get``, ``[key]``,
    ``[key] = value``, ``in``) of at most ``max_graphs`` graphs (``derived``: :data:`DERIVED_PER_GRAPH` entries per graph):
    a service that sees graph after graph keeps the most recent, its memory flat."""

    def __init__(
        self, degrees: tuple[int, ...], rules: tuple[str, ...], num_free: int, whole: int, max_graphs: int = MAX_TABLE_GRAPHS
    ) -> None:
        self.degrees, self.rules, self.num_free, self.whole = degrees, rules, num_free, whole
        self.indices: list[tuple[int, ...] | None] = []
        self.slots: list[int] = []
        self.repeats: list[bool] = []
        self.breaks: list[int] = []
        self.shapes: list[PlacementShape] = []
        self.predicted: LRUCache[str, tuple[Prediction, ...]] = LRUCache(max_graphs)
        self.best: LRUCache[str, float] = LRUCache(max_graphs)
        self.derived: LRUCache[Any, Any] = LRUCache(DERIVED_PER_GRAPH * max_graphs)

    def __len__(self) -> int:
        return len(self.indices)

    @cached_property
    def slot_array(self) -> np.ndarray:
        """``slots`` as an int64 array (-1 picks the last of an array one longer than ``shapes``)."""
        return np.array(self.slots, dtype=np.int64)

    def devices(self, i: int, ids: list[int]) -> tuple[int, ...] | None:
        """Entry ``i``'s devices on a mask whose free devices are ``ids`` (ascending)."""
        idx = self.indices[i]
        return _pick(ids, idx) if idx is not None else None

    def entries(self, ids: list[int]) -> tuple[PlacementEntry, ...]:
        """The table on a mask whose free devices are ``ids``."""
        rules, shapes = self.rules, self.shapes
        r = len(rules)
        return tuple(
            PlacementEntry(self.degrees[i // r], rules[i % r], self.devices(i, ids), shapes[slot] if slot >= 0 else None, repeat)
            for i, (slot, repeat) in enumerate(zip(self.slots, self.repeats, strict=True))
        )


class Placements:
    """Placement shapes and tables on ``cluster`` (its devices' ``rate``, speed x compute_scale; ``speed``; ``memory``);
    each table keeps the predictions of at most ``max_graphs`` graphs."""

    def __init__(
        self, cluster: Cluster, rate: list[float], speed: list[float], memory: list[float], max_graphs: int = MAX_TABLE_GRAPHS
    ) -> None:
        self.cluster, self._rate, self._speed, self._memory = cluster, rate, speed, memory
        self.max_graphs = max_graphs
        self._server_of = cluster.server_list
        self._sizes = np.bincount(cluster.server_of, minlength=cluster.num_servers).tolist()
        self._starts = np.searchsorted(cluster.server_of, np.arange(cluster.num_servers)).astype(np.int64)
        kinds = set(zip(speed, cluster.device_model, memory, cluster.compute_scale, strict=True))
        self._uniform = len(kinds) == 1  # every device alike: a placement's shape is its devices per server
        self._counts_only = self._uniform and len(set(self._sizes)) == 1  # and every server: a table is its free counts
        self._shapes: dict[tuple[int, ...], PlacementShape] = {}  # device tuple -> shape; cleared when full
        self._interned: dict[PlacementShape, PlacementShape] = {}  # equal shapes are one object (cleared with _shapes)
        self._by_counts: dict[tuple[int, ...], PlacementShape] = {}  # uniform clusters: devices per server -> shape
        self.clear_tables()

    def clear_tables(self) -> None:
        """Forget every table (and the predictions they hold); shapes stay."""
        self._tables: LRUCache[tuple, PlacementTable] = LRUCache(MAX_TABLES)
        self._by_mask: LRUCache[tuple, tuple] = LRUCache(MAX_MASKS)
        self._entries: LRUCache[tuple, tuple[PlacementEntry, ...]] = LRUCache(MAX_DEVICE_TABLES)

    # -- shapes -----------------------------------------------------------------------
    def shape(self, devices: tuple[int, ...]) -> PlacementShape:
        """The shape of a device tuple (memoised; equal shapes are one object)."""
        shape = self._shapes.get(devices)
        return shape if shape is not None else self._new_shape(devices)

    def slowest(self, devices: Sequence[int]) -> int:
        """The placed device with the lowest sustained rate (speed x compute_scale): it paces the job."""
        return min(devices, key=self._rate.__getitem__)

    def _new_shape(self, key: tuple[int, ...]) -> PlacementShape:
        if len(self._shapes) >= MAX_SHAPES:
            self._shapes.clear()
            self._interned.clear()
            self._by_counts.clear()
        if self._uniform and key:  # every device alike: the devices per server decide the shape
            counts = _per_server(key, self._server_of)
            shape = self._by_counts.get(counts)
            if shape is None:
                shape = self._by_counts[counts] = self._intern(self._shape(key))
            self._shapes[key] = shape
            return shape
        shape = self._shapes[key] = self._intern(self._shape(key))
        return shape

    def _intern(self, shape: PlacementShape) -> PlacementShape:
        return self._interned.setdefault(shape, shape)

    def _shape(self, devices: tuple[int, ...]) -> PlacementShape:
        counts = _per_server(devices, self._server_of)
        slowest = self.slowest(devices)
        return PlacementShape(
            degree=len(devices),
            servers=len(counts),
            min_per_server=counts[-1],
            max_per_server=counts[0],
            speed=self._speed[slowest],
            counts=counts,
            device=self.cluster.device_model[slowest],
            memory_bytes=min(self._memory[d] for d in devices),
            compute_scale=self.cluster.compute_scale[slowest],
        )

    # -- tables -----------------------------------------------------------------------
    def table(self, free: np.ndarray, degrees: tuple[int, ...], rules: tuple[str, ...]) -> PlacementTable:
        """The table of the free-device mask ``free`` ((N,) bool) at ``degrees`` x ``rules``."""
        mask = (free.tobytes(), degrees, rules)
        key = self._by_mask.get(mask)
        if key is None:
            key = self._by_mask[mask] = (self._free_counts(free), degrees, rules)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = self._build(FreeDevices(self.cluster, free), degrees, rules)
        return table

    def entries(self, free: np.ndarray, degrees: tuple[int, ...], rules: tuple[str, ...]) -> tuple[PlacementEntry, ...]:
        """:meth:`table` with each placement's devices on ``free`` (memoised per mask)."""
        key = (free.tobytes(), degrees, rules)
        entries = self._entries.get(key)
        if entries is None:
            entries = self._entries[key] = self.table(free, degrees, rules).entries(np.flatnonzero(free).tolist())
        return entries

    def _free_counts(self, free: np.ndarray) -> tuple:
        """What a table is kept by: the free devices of each server that has any, in server order (with its id unless
        every device and every server is alike)."""
        per_server = np.add.reduceat(free, self._starts, dtype=np.int64).tolist() if len(free) else []
        if self._counts_only:
            return tuple(c for c in per_server if c)
        return tuple((s, c) for s, c in enumerate(per_server) if c)

    def _build(self, free: FreeDevices, degrees: tuple[int, ...], rules: tuple[str, ...]) -> PlacementTable:
        (starts, counts), ids, sizes, server_of = free.runs, free.ids, self._sizes, self._server_of
        whole = [count == sizes[server_of[ids[start]]] for start, count in zip(starts, counts, strict=True)]  # per server with free
        place = [k for k, count in enumerate(counts) for _ in range(count)]  # per free id: its server's place among those
        table = PlacementTable(degrees, rules, free.count, sum(whole), self.max_graphs)
        columns = [rule_indices(starts, counts, rule, degrees) for rule in rules]
        slot_of: dict[int, int] = {}  # id(shape) -> its place in shapes
        indices, slots, repeats, breaks, shapes = table.indices, table.slots, table.repeats, table.breaks, table.shapes
        by_counts = self._by_counts if self._uniform else None  # devices alike: a shape is its devices per server
        for i in range(len(degrees)):
            earlier: dict[tuple[int, ...], tuple[int, int]] = {}  # this degree's placements so far -> (slot, breaks)
            for column in columns:
                idx = column[i]
                indices.append(idx)
                if idx is None:
                    slots.append(-1)
                    repeats.append(False)
                    breaks.append(0)
                    continue
                seen = earlier.get(idx)
                repeats.append(seen is not None)
                if seen is None:
                    takes, broken = _takes(idx, place, whole, starts, counts)
                    shape = by_counts.get(takes) if by_counts is not None else None
                    if shape is None:
                        shape = self.shape(_pick(ids, idx))
                    slot = slot_of.get(id(shape), -1)
                    if slot < 0:
                        slot = slot_of[id(shape)] = len(shapes)
                        shapes.append(shape)
                    seen = earlier[idx] = (slot, broken)
                slots.append(seen[0])
                breaks.append(seen[1])
        return table


def _per_server(devices: tuple[int, ...], server_of: list[int]) -> tuple[int, ...]:
    """Devices per spanned server, largest first."""
    per_server: dict[int, int] = {}
    for d in devices:
        s = server_of[d]
        per_server[s] = per_server.get(s, 0) + 1
    return tuple(sorted(per_server.values(), reverse=True))


def _pick(ids: list[int], idx: tuple[int, ...]) -> tuple[int, ...]:
    """``ids`` at ``idx`` (ascending), one slice when they are one run."""
    if idx[-1] - idx[0] + 1 == len(idx):
        return tuple(ids[idx[0] : idx[-1] + 1])
    return tuple([ids[j] for j in idx])


def _takes(idx: tuple[int, ...], place: list[int], whole: list[bool], starts: list[int], counts: list[int]) -> tuple[tuple[int, ...], int]:
    """(devices per spanned server, largest first; the wholly free servers among them) of the free ids at ``idx``
    (``place``: each free id's server among those with free devices, whose runs of free ids start at ``starts`` and
    hold ``counts``; ``whole``: whether each of those is wholly free)."""
    runs: list[int] = []
    broken = 0
    if idx[-1] - idx[0] + 1 == len(idx):  # one run of free ids: server by server, not id by id
        lo, hi = idx[0], idx[-1] + 1
        for k in range(place[lo], place[hi - 1] + 1):
            runs.append(min(starts[k] + counts[k], hi) - max(starts[k], lo))
            broken += whole[k]
    else:
        last = -1
        for j in idx:
            k = place[j]
            if k == last:
                runs[-1] += 1
            else:
                runs.append(1)
                last = k
                broken += whole[k]
    runs.sort(reverse=True)
    return tuple(runs), broken
