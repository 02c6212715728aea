"""Which of a cluster's constants a set of rows can fit, with their priors and bounds (:mod:`placer.calibration.fit`).

==========================================  ===================================================================
constant                                    fitted when the rows include
==========================================  ===================================================================
``links.intra_server.efficiency``           a placement with two or more devices on one server
``links.inter_server.efficiency``           a placement that spans servers
``links.*.latency_s``                       such placements of three or more jobs (bounded and held by its prior)
``communication.overlap``                   placements spanning servers of two or more jobs (graph, batch size)
``device_types.T.compute_scale``            a job measured on type ``T`` and on another type
``jobs.NAME.compute_scale``                 any row of the job
``jobs.NAME.iteration_s``                   rows of the job at two or more batch sizes
``overheads.sync_s``                        placements of two or more devices, of two or more jobs
==========================================  ===================================================================

A link's *efficiency* is the fraction of its line rate (the file's ``bandwidth_Bps``) a collective
gets: at most 1, at least :data:`MIN_EFFICIENCY`. The overlap (:mod:`placer.cost.data_parallel`)
lies in [0, 1]. What is not fitted is kept, with the reason (the calibration report prints it).

Efficiencies and the overlap are fitted only for a cluster file that opts into the communication terms
(:attr:`placer.cluster.topology.ClusterSpec.detailed_comm`: a link ``kind`` or a ``[communication]``
table). A file that does not is calibrated as before them: each link's ``bandwidth_Bps`` is fitted
(at most the file's, at least :data:`MIN_EFFICIENCY` of it, the same prior), no overlap, one start.
"""

from __future__ import annotations

from collections.abc import Callable

from placer.calibration.measurements import Row
from placer.calibration.priors import (
    BANDWIDTH_SIGMA,
    OVERHEAD_SIGMA_S,
    OVERLAP_SIGMA,
    SCALE_SIGMA,
    Parameter,
    latency_bounds,
)
from placer.cluster.devices import device_model
from placer.cluster.topology import Cluster
from placer.cost.shape import PlacementShape

MIN_EFFICIENCY = 1e-3
MAX_OVERHEAD_S = 60.0
MAX_GENERIC_SCALE = 100.0
MESSAGE_SPREAD = 4.0  # all-reduce messages this many times apart in size separate a link's latency from its bandwidth
FASTEST_AT_HIGH = ("efficiency", "bandwidth_Bps", "compute_scale", "overlap")  # constants whose upper bound gives the fastest step


def parameters(
    cluster: Cluster,
    rows: list[Row],
    shapes: list[PlacementShape],
    types: list[str],
    evidence: frozenset[str],
    message_spread: Callable[[list[Row]], float],
) -> tuple[list[Parameter], dict[str, str], list[str]]:
    """(constants to fit, path -> why each other stays as given, links whose latency only the tight prior holds).

    ``evidence``: links whose latency the rows were shown to prefer (a wide prior); ``message_spread(rows)``: largest over
    smallest all-reduce message among ``rows``' graphs."""
    spec, links = cluster.spec, cluster.spec.links
    detailed = spec.detailed_comm
    jobs = lambda rows: {(r.graph.key, r.graph.batch_size, r.graph.precision) for r in rows}  # noqa: E731
    intra = [r for r, s in zip(rows, shapes, strict=True) if s.max_per_server > 1]
    inter = [r for r, s in zip(rows, shapes, strict=True) if s.servers > 1]
    variety = {  # distinct numbers of servers spanned / of devices on one server: latency and bandwidth separate
        "intra_server": {s.max_per_server for s in shapes if s.max_per_server > 1},
        "inter_server": {s.servers for s in shapes if s.servers > 1},
    }
    messages = {"intra_server": message_spread(intra), "inter_server": message_spread(inter)}
    spread = [r for r in rows if len(r.devices) > 1]
    params: list[Parameter] = []
    kept: dict[str, str] = {}
    unproven: list[str] = []

    def add(keys: tuple[str, ...], nominal: float, low: float, high: float, log: bool, informed: bool, why: str, sigma: float) -> None:
        if informed:
            params.append(Parameter(keys, min(max(nominal, low), high), low, high, log, sigma))
        else:
            kept[".".join(keys)] = why

    for name, link, group in (("intra_server", links.intra_server, intra), ("inter_server", links.inter_server, inter)):
        where = "two or more devices on one server" if name == "intra_server" else "placements spanning servers"
        if detailed:
            add(
                ("links", name, "efficiency"),
                link.delivered,
                MIN_EFFICIENCY,
                1.0,
                True,
                bool(group),
                f"no rows with {where}",
                BANDWIDTH_SIGMA,
            )
        else:  # as before the communication terms: the line rate itself, at most the file's
            bw = link.bandwidth_Bps
            add(("links", name, "bandwidth_Bps"), bw, bw * MIN_EFFICIENCY, bw, True, bool(group), f"no rows with {where}", BANDWIDTH_SIGMA)
        latency_informed = len(jobs(group)) >= 3
        proven = latency_informed and (len(variety[name]) >= 2 or messages[name] >= MESSAGE_SPREAD)
        low, high, sigma = latency_bounds(name, link.latency_s, proven, name in evidence)
        if latency_informed and not proven and name not in evidence:
            unproven.append(name)
        why = f"{where}: fewer than 3 distinct jobs"
        add(("links", name, "latency_s"), link.latency_s, low, high, True, latency_informed, why, sigma)
    if detailed:
        why = "placements spanning servers of fewer than 2 jobs: compute and communication cannot be told apart"
        add(("communication", "overlap"), spec.comm.overlap, 0.0, 1.0, False, len(jobs(inter)) >= 2, why, OVERLAP_SIGMA)
    why = "multi-device rows of fewer than 2 jobs"
    add(("overheads", "sync_s"), spec.overheads.sync_s, 0.0, MAX_OVERHEAD_S, False, len(jobs(spread)) >= 2, why, OVERHEAD_SIGMA_S)
    kept["overheads.iteration_s"] = "fitted per job instead (jobs.NAME.iteration_s)"
    types_of: dict[str, set[str]] = {}
    for row, kind in zip(rows, types, strict=True):
        types_of.setdefault(row.job_name, set()).add(kind)
    for type_name, dtype in spec.device_types.items():
        high = device_model(dtype.model).max_compute_scale() if dtype.model else MAX_GENERIC_SCALE
        shared = any(type_name in kinds and len(kinds) > 1 for kinds in types_of.values())
        why = "no job measured on it and on another type (each job's own scale absorbs it)"
        add(("device_types", type_name, "compute_scale"), dtype.compute_scale, 0.01, high, True, shared, why, SCALE_SIGMA)
    peak = max((device_model(d.model).max_compute_scale() for d in spec.device_types.values() if d.model), default=MAX_GENERIC_SCALE)
    for job in sorted(types_of):
        own = spec.jobs.get(job)
        batches = len({r.graph.batch_size for r in rows if r.job_name == job})
        add(("jobs", job, "compute_scale"), own.compute_scale if own else 1.0, 0.01, min(peak, 10.0), True, True, "", SCALE_SIGMA)
        fixed = own.iteration_s if own else 0.0
        add(("jobs", job, "iteration_s"), fixed, 0.0, MAX_OVERHEAD_S, False, batches >= 2, "one batch size only", OVERHEAD_SIGMA_S)
    return params, kept, unproven
