"""The observation's ``options`` and ``groups`` arrays (:mod:`placer.envs.observation` documents their features).

Both are built from what changes at a decision alone: an option's placement, shape, strategy and the servers it breaks
are the same for every mask with the same free devices per server, so each (placement table, graph)'s rows are built
once and kept in the cost model's table (:class:`placer.cost.tables.PlacementTable`); only what the job's deadline and
length decide (feasible, JCT / time left, device-seconds / sequential JCT) is computed per decision, over arrays. The
server groups' sizes, memory and speed are kept per cluster. The values are those of one option at a time, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from weakref import WeakKeyDictionary

import numpy as np

from placer.cluster.placement import PLACEMENT_RULES
from placer.cluster.topology import Cluster
from placer.cost import Strategy
from placer.envs.feature_kernels import group_columns, option_job_columns
from placer.sim.options import Option, OptionTable, fitting_iteration_s
from placer.sim.state import ClusterView
from placer.sim.types import DEADLINE_TOLERANCE

OPTION_FEATURES, GROUP_FEATURES = 13, 6
# the option's placement rule, one-hot in PLACEMENT_RULES' order (first_fit, best_fit, spread: what trained policies read)
RULE_INDEX = {rule: i for i, rule in enumerate(PLACEMENT_RULES)}
REFERENCE_MEMORY_BYTES = 80e9


class _Split(dict):
    """(dp, tp, pp) -> (log2(dp) / 4, log2(tp) / 4, log2(pp) / 4), filled on first use."""

    def __missing__(self, key: tuple[int, int, int]) -> tuple[float, float, float]:
        value = self[key] = tuple(math.log2(k) / 4 for k in key)
        return value


_SPLIT = _Split()
_RULE_ONE_HOT = {rule: tuple(float(i == k) for k in range(len(RULE_INDEX))) for rule, i in RULE_INDEX.items()}


def option_rows(
    table: Sequence[Option], view: ClusterView, max_degree: int, left: float, seq: float, whole: int, is_whole: list[bool]
) -> np.ndarray:
    """(len(table), OPTION_FEATURES) float32: one row per option; ``left``: the job's seconds left (at least 1e-9),
    ``seq``: its sequential JCT, ``whole``: wholly free servers, ``is_whole``: whether each server is."""
    if isinstance(table, OptionTable):
        return _table_rows(table, max_degree, left, seq)
    cluster = view.cluster
    n, servers, server_list, num_free = cluster.num_devices, cluster.num_servers, cluster.server_list, view.num_free
    rows = []
    broken_by_devices: dict[tuple[int, ...], int] = {}  # rules often give the same devices
    for o in table:
        rule = _RULE_ONE_HOT[o.rule]
        if o.devices is None or o.jct_s is None:
            rows.append((0.0, 1.0, 1.0, 0.0, o.degree / max_degree, 0.0, 0.0, 0.0, 0.0, *rule, 0.0))
            continue
        split = _split(o.strategy)
        broken = broken_by_devices.get(o.devices)
        if broken is None:  # whole-free servers the placement breaks into
            broken = broken_by_devices[o.devices] = len({server for server in map(server_list.__getitem__, o.devices) if is_whole[server]})
        rows.append(
            (
                float(o.feasible),
                min(o.jct_s / left, 4) / 4,
                min(o.degree * o.jct_s / seq, 4) / 4,
                o.servers / o.degree,
                o.degree / max_degree,
                (num_free - o.degree) / n,
                *split,
                *rule,
                (whole - broken) / servers,
            )
        )
    return np.array(rows, dtype=np.float32).reshape(len(table), OPTION_FEATURES)


def _table_rows(options: OptionTable, max_degree: int, left: float, seq: float) -> np.ndarray:
    """:func:`option_rows` of an :class:`OptionTable`: its table's rows for the graph, with the job's three columns."""
    static, fit, degree, iteration = _static_rows(options, max_degree)
    rows = static.copy()
    if len(fit):  # meets_deadline, JCT / time left, device-seconds / sequential JCT
        limit = options.deadline_s * (1 + DEADLINE_TOLERANCE)
        option_job_columns(rows, fit, degree, iteration, float(options.job.iterations), limit, left, seq)
    return rows


def _static_rows(options: OptionTable, max_degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rows (float32, the job's three columns 0), the rows that fit, their degrees and iterations (s), float64), kept in
    the table."""
    table, graph, cost = options.table, options.job.graph, options.view.cost
    key = ("option_rows", graph.key, max_degree, options.padding)
    kept = table.derived.get(key)
    if kept is not None:
        return kept
    unfit, fitted, degree = _table_columns(options, max_degree)
    slots, n = table.slot_array, len(table)
    predicted = options.predicted
    fits = np.array([p.fits for p in predicted] + [False], dtype=bool)[slots]  # slot -1 (no devices): the False
    splits = [_split(p.strategy) for p in predicted]
    rows = unfit.copy()
    rows[:n][fits] = fitted[fits]
    rows[:n, 6:9][fits] = np.array([*splits, (0.0, 0.0, 0.0)], dtype=np.float64)[slots][fits]
    fit = np.flatnonzero(fits)
    iteration = fitting_iteration_s(cost, graph, table, predicted)[fit]
    kept = (rows.astype(np.float32), fit, degree[fit], iteration)  # float64 rows rounded once, as np.array(rows) rounds
    if cost.cache:
        table.derived[key] = kept
    return kept


def _table_columns(options: OptionTable, max_degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The table's rows as for an option that does not fit (padding included), as for one that fits (less its
    strategy's columns and the job's three), and each row's degree (float64): what no graph changes."""
    table, cluster = options.table, options.view.cost.cluster
    degree, unfit, fitted = _layout(table.degrees, table.rules, max_degree, options.padding)
    n = len(table)
    fitted = fitted.copy()
    spanned = np.array([*(shape.servers for shape in table.shapes), 0], dtype=np.int64)[table.slot_array]
    fitted[:, 3] = spanned / degree[:n]
    fitted[:, 5] = (table.num_free - degree[:n]) / cluster.num_devices
    fitted[:, 12] = (table.whole - np.array(table.breaks, dtype=np.int64)) / cluster.num_servers
    return unfit, fitted, degree.astype(np.float64)


_LAYOUTS: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _layout(degrees: tuple[int, ...], rules: tuple[str, ...], max_degree: int, padding: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each row's degree (int64), the rows of options that do not fit, the columns of those that fit that only the degree
    and rule decide) of a table at ``degrees`` x ``rules`` with ``padding`` rows beyond: kept per layout."""
    key = (degrees, rules, max_degree, padding)
    kept = _LAYOUTS.get(key)
    if kept is None:
        first = degrees[-1] + 1 if degrees else 1
        degree = np.array([d for d in degrees for _ in rules] + [first + j // len(rules) for j in range(padding)], dtype=np.int64)
        one_hot = np.array([_RULE_ONE_HOT[rules[i % len(rules)]] for i in range(len(degree))], dtype=np.float64).reshape(-1, 3)
        unfit = np.zeros((len(degree), OPTION_FEATURES), dtype=np.float64)
        unfit[:, 1] = unfit[:, 2] = 1.0
        unfit[:, 4] = degree / max_degree
        unfit[:, 9:12] = one_hot
        n = len(degrees) * len(rules)
        fitted = np.zeros((n, OPTION_FEATURES), dtype=np.float64)
        fitted[:, 4] = degree[:n] / max_degree
        fitted[:, 9:12] = one_hot[:n]
        kept = _LAYOUTS[key] = (degree, unfit, fitted)
    return kept


def _split(strategy: Strategy | None) -> tuple[float, float, float]:
    """The strategy's columns of an option's row (all 0 without one, or for ``sipml``)."""
    return (0.0, 0.0, 0.0) if strategy is None or strategy.sipml else _SPLIT[strategy.dp, strategy.tp, strategy.pp]


def server_groups(num_servers: int, max_groups: int) -> np.ndarray:
    """(num_servers,) group index of each server: itself, or one of ``max_groups`` consecutive chunks."""
    if num_servers <= max_groups:
        return np.arange(num_servers)
    return np.arange(num_servers) * max_groups // num_servers


class _Groups:
    """What a cluster's server groups are whatever runs: each device's group, each group's first device, the columns of
    size, memory and speed (clipped as the observation clips them), the mask, and whether each group is one device."""

    def __init__(self, cluster: Cluster, max_groups: int) -> None:
        self.group = group = server_groups(cluster.num_servers, max_groups)[cluster.server_of]
        count = np.bincount(group, minlength=max_groups).astype(np.float64)
        self.used = int((count > 0).sum())  # groups 0..used-1 hold devices (consecutive servers, consecutive groups)
        self.starts = np.searchsorted(group, np.arange(self.used))
        self.single = bool((group == np.arange(len(group))).all())  # device d is group d: sums over groups are the values
        self.safe = np.maximum(count, 1)
        self.static = np.zeros((max_groups, GROUP_FEATURES), dtype=np.float32)
        self.static[:, 1] = count / count.max()
        self.static[:, 4] = np.bincount(group, weights=cluster.memory_bytes, minlength=max_groups) / self.safe / REFERENCE_MEMORY_BYTES
        self.static[:, 5] = np.bincount(group, weights=cluster.speed, minlength=max_groups) / self.safe
        np.clip(self.static, 0.0, 4.0, out=self.static)
        self.mask = (count > 0).astype(np.float32)
        self.least_memory = cluster.memory_bytes.min()


_GROUPS: WeakKeyDictionary[Cluster, dict[int, _Groups]] = WeakKeyDictionary()


def _groups(cluster: Cluster, max_groups: int) -> _Groups:
    groups = _GROUPS.setdefault(cluster, {}).get(max_groups)
    if groups is None:
        groups = _GROUPS[cluster][max_groups] = _Groups(cluster, max_groups)
    return groups


def least_memory(cluster: Cluster) -> np.float64:
    """The cluster's smallest device memory (bytes), kept."""
    return _groups(cluster, 1).least_memory


def group_arrays(view: ClusterView, time_left_s: float, max_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(max_groups, GROUP_FEATURES) server-group features and their (max_groups,) mask: the kept columns (size, memory,
    speed) and, computed at the decision (:func:`placer.envs.feature_kernels.group_columns`), the free fraction and the
    mean and least busy time until free relative to ``time_left_s``."""
    groups = _groups(view.cluster, max_groups)
    out = groups.static.copy()
    group_columns(view.free, view.free_at, view.now, time_left_s, groups.group, groups.single, groups.used, groups.starts, groups.safe, out)
    return out, groups.mask.copy()
