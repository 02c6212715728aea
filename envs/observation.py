"""Observations: a ``Dict`` naming the job's graph, with the job, the choices and the cluster.

:func:`observe` is the one builder: a pure function of an :class:`Offer` (the job, the cluster
view, the option table), the run's :class:`JobHistory`, the config and a :class:`GraphRef`. The
env and the inference adapter (:class:`placer.policies.loading.LearnedPolicy`) both call it.

The graph is not copied into the observation: ``graph`` holds its id, an index into a
:class:`GraphTable` (the env config's graph list) whose arrays the env and the policy's features
extractor hold once. A graph in no table (the service places any graph) has the id
:data:`UNLISTED` and its encoding is fed to the network directly. The table's arrays hold the
job's forward ops only; each forward op carries its mirrored backward op's costs as features
(the backward graph is the forward graph reversed). Keys, shapes (``N`` = the table's largest
forward op count, at most max_nodes; ``E`` likewise, at most max_edges; ``O`` = max_degree x rules,
``G`` = max_groups) and features, all float32 unless said:

- ``graph`` (1,) int64: the graph's id in the table (observation); the table's arrays, per graph:
- ``nodes`` (N, 8): forward and backward compute as fractions of the job's total;
  log10(1 + forward ms) / 3, log10(1 + backward ms) / 3; log10(1 + parameter bytes) / 10,
  log10(1 + activation bytes) / 10; in-degree / 4, out-degree / 4.
- ``node_mask`` (N,): 1 for real ops, 0 for padding.
- ``edge_index`` (2, E) int64: forward edges (source, target) as node positions; padding is 0.
- ``edges`` (E, 1): log10(1 + tensor bytes) / 10. ``edge_mask`` (E,).

The rest is per decision:

- ``job`` (12,): beta; log10(sequential JCT / the median sequential JCT of the jobs seen so far) / 2;
  log10(memory at degree 1 / smallest device memory) / 2; log10(1 + forward ops) / 4;
  log10(sequential iteration s) / 2; the fraction of jobs seen so far with a shorter sequential
  JCT (sizes are relative to the workload, so a trace of 10^6-step jobs reads like a synthetic
  one; see :class:`JobHistory`); then the queue: queueing on (0/1); time waited / deadline; slack (latest start - now) /
  deadline; jobs waiting / capacity; log10(sequential JCT / the waiting jobs' mean) / 2; the
  fraction of waiting jobs whose latest start comes earlier (all 0 in the loss system but the first).
- ``options`` (O, 13) per (degree, rule), degree-major: feasible (0/1); min(JCT / deadline, 4) / 4;
  min(device-seconds / sequential JCT, 4) / 4; servers spanned / degree; degree / max_degree;
  devices left free after placing / devices; the cost model's strategy as log2(dp) / 4,
  log2(tp) / 4, log2(pp) / 4 (all 0 for ``sipml``); the rule one-hot (first_fit, best_fit,
  spread); wholly free servers left after placing / servers (what packing keeps for big jobs).
  An option without free devices reads (0, 1, 1, 0, degree / max_degree, 0, 0, 0, 0, rule, 0).
- ``groups`` (G, 6): the cluster as at most ``G`` groups of whole servers (one server per group
  when the cluster has at most ``G`` servers, else consecutive servers split into ``G`` groups),
  so any cluster size fits: fraction of devices free; devices / the largest group's; over busy
  devices the mean and the least of min(seconds until free / time left to the job, 4) / 4;
  mean memory / 80 GB; mean relative speed. ``group_mask`` (G,).
- ``cluster`` (5,): fraction of devices free; fraction of servers wholly free; running jobs /
  devices; log2(devices) / 13; fraction of devices free by half the job's time left.
- ``history`` (8,), only with ``EnvConfig(history=True)``: what the stream has shown so far
  (:class:`placer.sim.history.ArrivalHistory`, the information ``lean:admit=auto`` has):
  log2(arrival rate over the last 8, 32 and 128 arrivals / the long-run rate) / 4; log2(rate over the
  last 32 arrivals / the 32 before) / 4; log1p(earlier arrivals of this same job: graph, length and
  deadline) / 4; 1 - exp(-seconds since its last arrival / 32 mean gaps) (1 if never); copies of it
  among the last 32 arrivals / 32; log10(1 + arrivals so far) / 4. All clipped to [-1, 1].
- ``meter`` (3,), only with ``EnvConfig(meter=True)``: the offered load the arrivals so far make
  (:class:`placer.sim.history.LoadMeter`, the information ``adaptive`` has): log2(load over the last
  32 and 96 arrivals) / 2; min(jobs seen / 96, 1). Clipped to [-1, 1].
- ``resize`` (5,), only with ``EnvConfig(elastic=True)``: for a running job offered a resize (:mod:`placer.envs.resize`; its
  ``job`` and ``options`` rows read as for an arriving job, each option's JCT being what resizing there leaves it): 1,
  the fraction of its iterations done, its degree / max_degree, its slack / deadline, 0; for an arriving job offered
  on the devices running jobs would give back (a :class:`~placer.envs.resize.ShrinkOffer`): 0, 0, 0, 0, the fraction of the
  cluster's devices they give back; all 0 for any other arriving job.
- ``advice`` (A,), only with ``EnvConfig(advisers=...)`` (A of them, :mod:`placer.envs.advice`): 1 for each adviser that
  holds or rejects the job; and ``options`` has A more columns, 1 where that adviser places the job on the option's devices.
  At a resize offer, 1 in ``advice`` where the adviser keeps the job, and the option column of the devices an elastic
  adviser's ``rebalance`` moves it to.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from placer.common.errors import EnvConfigError, PlacerError
from placer.envs.action import Offer as Offer  # where it was
from placer.envs.advice import advice_arrays
from placer.envs.config import EnvConfig
from placer.envs.features import GROUP_FEATURES, OPTION_FEATURES, group_arrays, least_memory, option_rows
from placer.envs.features import server_groups as server_groups  # where it was
from placer.envs.resize import RESIZE_FEATURES, ResizeOffer, ShrinkOffer, resize_features
from placer.graphs.catalog import resolve_graph
from placer.graphs.job_graph import JobGraph
from placer.sim.history import RATE_WINDOWS, RECENT, ArrivalHistory, LoadMeter
from placer.sim.options import OptionTable
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job

if TYPE_CHECKING:
    from gymnasium import spaces

NODE_FEATURES, EDGE_FEATURES, JOB_FEATURES, CLUSTER_FEATURES = 8, 1, 12, 5
HISTORY_FEATURES = 8
METER_WINDOWS = (32, 96)  # arrivals the ``meter`` observation's offered-load readings average over
METER_FEATURES = len(METER_WINDOWS) + 1
JOB_EXTRAS = ("history", "meter", "advice", "resize")  # optional observations the job network reads beside ``job``, in this order
GRAPH_KEYS = ("nodes", "node_mask", "edge_index", "edges", "edge_mask")  # a graph's arrays, in the GNN's argument order
UNLISTED = -1  # the id of a graph in no table: its encoding is fed to the network directly


class GraphTooLargeError(PlacerError):
    """A job graph or cluster exceeds the observation's padding limits."""


def observation_space(
    num_graphs: int,
    num_options: int,
    max_groups: int,
    history: bool = False,
    meter: bool = False,
    advisers: int = 0,
    resize: bool = False,
) -> spaces.Dict:
    """The ``Dict`` space of :func:`observe` for a table of ``num_graphs`` graphs (and ``advisers`` advisers); imports
    gymnasium, which nothing else here needs (deciding with a trained policy does without it)."""
    from gymnasium import spaces

    def box(*shape, low=0.0, high=1.0):
        return spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)

    return spaces.Dict(
        {
            "graph": spaces.Box(0, max(num_graphs - 1, 0), shape=(1,), dtype=np.int64),
            "job": box(JOB_FEATURES, low=-4.0, high=4.0),
            "options": box(num_options, OPTION_FEATURES + advisers),
            "groups": box(max_groups, GROUP_FEATURES, high=4.0),
            "group_mask": box(max_groups),
            "cluster": box(CLUSTER_FEATURES),
        }
        | ({"history": box(HISTORY_FEATURES, low=-1.0)} if history else {})
        | ({"meter": box(METER_FEATURES, low=-1.0)} if meter else {})
        | ({"advice": box(advisers)} if advisers else {})
        | ({"resize": box(RESIZE_FEATURES)} if resize else {})
    )


class GraphRef(NamedTuple):
    """What an observation needs of the job's graph: its id in a :class:`GraphTable` (or :data:`UNLISTED`) and its forward op count."""

    id: int
    forward_ops: int


class GraphTable:
    """The graphs observations name by id (their position in ``graphs``), each one's arrays held once.

    ``arrays`` maps each of :data:`GRAPH_KEYS` to a (len(graphs), ...) array, padded to the table's
    largest graph; a graph over ``max_nodes`` forward ops or ``max_edges`` forward edges is an error.
    """

    def __init__(self, graphs: Sequence[JobGraph], max_nodes: int, max_edges: int) -> None:
        if not graphs:
            raise EnvConfigError("a graph table needs at least one graph")
        self.graphs = tuple(graphs)
        sizes = [forward_size(g) for g in self.graphs]
        for graph, (nodes, edges) in zip(self.graphs, sizes, strict=True):
            _check_size(graph, nodes, edges, max_nodes, max_edges)
        pad_nodes, pad_edges = max(1, *(n for n, _ in sizes)), max(1, *(e for _, e in sizes))
        per_graph = [graph_arrays(g, pad_nodes, pad_edges) for g in self.graphs]
        self.arrays = {k: np.stack([a[k] for a in per_graph]) for k in GRAPH_KEYS}
        self._refs: dict[str, GraphRef] = {}
        for i, (graph, (nodes, _)) in enumerate(zip(self.graphs, sizes, strict=True)):
            self._refs.setdefault(graph.key, GraphRef(i, nodes))

    @classmethod
    def from_config(cls, config: EnvConfig) -> GraphTable:
        """The table of ``config.workload.graphs`` (shipped names or JSON paths), in that order."""
        return cls([resolve_graph(g) for g in config.workload.graphs], config.max_nodes, config.max_edges)

    def __len__(self) -> int:
        return len(self.graphs)

    def ref(self, graph: JobGraph) -> GraphRef:
        """``graph``'s id and forward op count; a graph not in the table is an error."""
        try:
            return self._refs[graph.key]
        except KeyError:
            raise EnvConfigError(f"graph {graph.name!r} is not in the observation's graph table") from None


def observe(
    offer: Offer | ResizeOffer | ShrinkOffer, history: JobHistory, config: EnvConfig, graph: GraphRef, advice: Sequence[Decision] = ()
) -> dict[str, np.ndarray]:
    """The observation of ``offer`` (module docstring): the one builder, pure (it writes nothing).

    ``history`` is the run's state and must already hold ``offer.job`` (whoever offers a job records
    it, :meth:`JobHistory.observe`); ``config`` gives max_degree, max_groups and whether to add
    ``history``; ``graph`` names the job's graph; ``advice``: each of ``config.advisers``' decisions on this offer
    (:meth:`placer.envs.advice.Advisers.advise`; at a :class:`~placer.envs.resize.ResizeOffer`, which reads as an offer of its running
    job, :meth:`~placer.envs.advice.Advisers.advise_resize`: holding is keeping the job).
    """
    if len(advice) != len(config.advisers):
        raise ValueError(f"{len(advice)} advisers' decisions for the config's {len(config.advisers)} advisers")
    out = {"graph": np.array([graph.id], dtype=np.int64)} | _decision_arrays(offer, history, config, graph.forward_ops)
    if config.advisers:
        columns, out["advice"] = advice_arrays(advice, offer.options)
        out["options"] = np.concatenate([out["options"], columns], axis=1)
    if config.elastic:
        out["resize"] = resize_features(offer, config.max_degree)
    return out


def forward_size(graph: JobGraph) -> tuple[int, int]:
    """(forward ops, forward edges) of ``graph``: the padding it needs."""
    g = graph.graph
    forward = {v for v, d in g.nodes(data=True) if d["pass"] == "forward"}
    return len(forward), sum(1 for u, v in g.edges if u in forward and v in forward)


def graph_arrays(graph: JobGraph, max_nodes: int, max_edges: int) -> dict[str, np.ndarray]:
    """The static, padded graph part of the observation for ``graph``."""
    g = graph.graph
    forward = sorted(v for v, d in g.nodes(data=True) if d["pass"] == "forward")
    position = {v: i for i, v in enumerate(forward)}
    edges = sorted((position[u], position[v], d["tensor_bytes"]) for u, v, d in g.edges(data=True) if u in position and v in position)
    _check_size(graph, len(forward), len(edges), max_nodes, max_edges)
    total = max(graph.sequential_iteration_s, 1e-12)
    nodes = np.zeros((max_nodes, NODE_FEATURES), dtype=np.float32)
    for v, i in position.items():
        fw = g.nodes[v]
        bw = g.nodes.get("bw:" + v[3:], {"compute_s": 0.0}) if v.startswith("fw:") else {"compute_s": 0.0}
        nodes[i] = (
            fw["compute_s"] / total,
            bw["compute_s"] / total,
            math.log10(1 + fw["compute_s"] * 1e3) / 3,
            math.log10(1 + bw["compute_s"] * 1e3) / 3,
            math.log10(1 + fw["param_bytes"]) / 10,
            math.log10(1 + fw["activation_bytes"]) / 10,
            0.0,
            0.0,
        )
    edge_index = np.zeros((2, max_edges), dtype=np.int64)
    edge_feats = np.zeros((max_edges, EDGE_FEATURES), dtype=np.float32)
    for k, (u, v, size) in enumerate(edges):
        edge_index[:, k] = (u, v)
        edge_feats[k, 0] = math.log10(1 + size) / 10
        nodes[v, 6] += 0.25
        nodes[u, 7] += 0.25
    np.clip(nodes, 0.0, 4.0, out=nodes)
    node_mask = np.zeros(max_nodes, dtype=np.float32)
    node_mask[: len(forward)] = 1
    edge_mask = np.zeros(max_edges, dtype=np.float32)
    edge_mask[: len(edges)] = 1
    return {
        "nodes": nodes,
        "node_mask": node_mask,
        "edge_index": edge_index,
        "edges": edge_feats,
        "edge_mask": edge_mask,
    }


def _check_size(graph: JobGraph, nodes: int, edges: int, max_nodes: int, max_edges: int) -> None:
    if nodes > max_nodes or edges > max_edges:
        raise GraphTooLargeError(
            f"graph {graph.name!r} has {nodes} forward ops and {edges} forward edges; the observation holds at most "
            f"{max_nodes} and {max_edges} (raise max_nodes / max_edges)"
        )


class JobHistory:
    """The jobs seen so far in one run (each counted once, however often offered): their sequential
    JCTs, their arrivals (``arrivals``: rates and recurrence) and the offered load they make
    (``meters``: one :class:`~placer.sim.history.LoadMeter` per window of :data:`METER_WINDOWS`).

    Online: it holds only jobs that have arrived, so features built on it use no future knowledge.
    """

    def __init__(self) -> None:
        self._sizes: list[float] = []
        self._seen: set[int] = set()
        self.arrivals = ArrivalHistory()
        self.meters = tuple(LoadMeter(window) for window in METER_WINDOWS)

    def observe(self, job: Job) -> None:
        if job.job_id not in self._seen:
            self._seen.add(job.job_id)
            bisect.insort(self._sizes, job.sequential_jct_s)
            self.arrivals.observe(job)
            for meter in self.meters:
                meter.observe(job)

    def relative(self, seconds: float) -> tuple[float, float]:
        """(seconds / median seen, fraction seen that are shorter); (1, 0.5) before any job."""
        if not self._sizes:
            return 1.0, 0.5
        median = self._sizes[len(self._sizes) // 2]
        return seconds / max(median, 1e-9), bisect.bisect_left(self._sizes, seconds) / len(self._sizes)


def _decision_arrays(
    offer: Offer | ResizeOffer | ShrinkOffer, history: JobHistory, config: EnvConfig, num_forward_ops: int
) -> dict[str, np.ndarray]:
    """The per-decision part: job, options, server groups and cluster features (and ``history`` if ``config.history``)."""
    job, view, table, max_degree, max_groups = offer.job, offer.view, offer.options, config.max_degree, config.max_groups
    cluster, cost = view.cluster, view.cost
    seq = job.sequential_jct_s
    left = max(job.remaining_s(view.now), 1e-9)
    memory_ratio = cost.memory_per_device(job.graph, 1) / least_memory(cluster)
    ratio, rank = history.relative(seq)
    job_feats = np.array(
        [
            job.beta,
            math.log10(max(ratio, 1e-8)) / 2,
            math.log10(max(memory_ratio, 1e-4)) / 2,
            math.log10(1 + num_forward_ops) / 4,
            math.log10(max(job.graph.sequential_iteration_s, 1e-6)) / 2,
            rank,
            *_queue_features(job, view),
        ],
        dtype=np.float32,
    )
    n = cluster.num_devices
    if isinstance(table, OptionTable):  # the cost model's table counted the free devices and the wholly free servers
        num_free, whole, is_whole = table.table.num_free, table.table.whole, []
    else:
        num_free = view.num_free
        per_server = np.bincount(cluster.server_of, minlength=cluster.num_servers)
        whole_servers = np.bincount(cluster.server_of, weights=view.free, minlength=cluster.num_servers) == per_server
        whole, is_whole = int(whole_servers.sum()), whole_servers.tolist()
    options = option_rows(table, view, max_degree, left, seq, whole, is_whole)
    groups, group_mask = group_arrays(view, left, max_groups)
    soon = np.count_nonzero((view.free_at - view.now) <= left / 2) / n  # the fraction: what .mean() gives, bit for bit
    busy_jobs = min(view.running / n, 1.0)
    cluster_feats = np.array([num_free / n, whole / cluster.num_servers, busy_jobs, math.log2(n) / 13, soon], dtype=np.float32)
    job_feats = np.minimum(np.maximum(job_feats, -4), 4)  # np.clip, without its Python wrappers
    out = {"job": job_feats, "options": options, "groups": groups, "group_mask": group_mask, "cluster": cluster_feats}
    if config.history:
        out["history"] = history_features(history.arrivals)
    if config.meter:
        out["meter"] = meter_features(history.meters, n)
    return out


def meter_features(meters: Sequence[LoadMeter], num_devices: int) -> np.ndarray:
    """(METER_FEATURES,) the ``meter`` observation: log2(offered load each meter reads) / 2 (0, as for load 1,
    before it reads one), then min(jobs seen / the longest window, 1): how far to trust them. Clipped to [-1, 1]."""
    loads = [meter.load(num_devices) for meter in meters]
    readings = [math.log2(max(load, 1e-3)) / 2 if load is not None else 0.0 for load in loads]
    trust = min(meters[-1].seen / max(METER_WINDOWS), 1.0) if meters else 0.0
    return _clip1(np.array([*readings, trust], dtype=np.float32))


def history_features(arrivals: ArrivalHistory) -> np.ndarray:
    """(HISTORY_FEATURES,) the ``history`` observation (module docstring) after the offered job was observed."""
    recurrence = arrivals.recurrence()
    gap = arrivals.mean_gap_s()
    since = recurrence["since"]
    if not math.isfinite(since) or not gap > 0:
        faded = 1.0
    else:
        faded = 1 - math.exp(-since / (RECENT * gap))
    features = np.array(
        [
            *(math.log2(arrivals.rate_ratio(w)) / 4 for w in RATE_WINDOWS),
            math.log2(arrivals.trend()) / 4,
            math.log1p(recurrence["count"]) / 4,
            faded,
            recurrence["recent"] / RECENT,
            math.log10(1 + arrivals.arrivals) / 4,
        ],
        dtype=np.float32,
    )
    return _clip1(features)


def _clip1(features: np.ndarray) -> np.ndarray:
    """``np.clip(features, -1, 1)`` without its Python wrappers: the same values (no bound is a signed zero to tie)."""
    return np.minimum(np.maximum(features, -1), 1)


def _queue_features(job: Job, view: ClusterView) -> tuple[float, ...]:
    deadline = max(job.deadline_s, 1e-9)
    if not view.queue.enabled:
        return (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    waiting = view.waiting or (job,)
    latest = job.latest_start_s
    mean_seq = sum(j.sequential_jct_s for j in waiting) / len(waiting)
    earlier = sum(j.arrival_s + j.beta * j.sequential_jct_s - j.fastest_jct_s < latest for j in waiting)  # latest_start_s
    return (
        1.0,
        (view.now - job.arrival_s) / deadline,
        min(max((latest - view.now) / deadline, 0.0), 1.0),
        len(waiting) / view.queue.capacity,
        math.log10(max(job.sequential_jct_s, 1e-9) / max(mean_seq, 1e-9)) / 2,
        earlier / len(waiting),
    )
