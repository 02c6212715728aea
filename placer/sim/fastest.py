"""The fastest placement on the idle cluster: what decides which jobs are avoidable (some policy could accept them),
the clairvoyant bound's options and ``placer.predict``'s placement."""

from __future__ import annotations

import math
from weakref import WeakKeyDictionary

from placer.cluster.placement import idle_placements
from placer.cost import CostModel, Prediction
from placer.sim.types import Job

FASTEST_MAX_DEGREE = 16
_IDLE: WeakKeyDictionary[CostModel, dict[tuple[str, int], dict[int, float]]] = WeakKeyDictionary()


def fastest_idle_placement(cost: CostModel, graph, degree: int) -> tuple[tuple[int, ...], Prediction] | None:
    """The fastest placement of ``degree`` devices on the idle cluster and its prediction: of the placements
    :func:`~placer.cluster.placement.idle_placements` gives, the fastest that fits in memory, else the fastest (None when
    the cluster has fewer than ``degree`` devices); ties go to the fewest servers, then the lowest devices. The one
    definition of "the fastest on the idle cluster": it decides which jobs are avoidable (:func:`idle_iteration_s`), the
    clairvoyant bound's options and the placement of ``placer.predict(graph, cluster, degree)``."""
    server_of = cost.cluster.server_of
    scored = [(devices, cost.predict(graph, devices)) for devices in idle_placements(cost.cluster, degree)]
    return min(scored, key=lambda pair: (not pair[1].fits, pair[1].iteration_s, len(set(server_of[list(pair[0])]))), default=None)


def idle_iteration_s(cost: CostModel, graph, max_degree: int = FASTEST_MAX_DEGREE) -> dict[int, float]:
    """{degree: the iteration (s) of the fastest placement of that many devices on the idle cluster
    (:func:`fastest_idle_placement`)}, for the degrees 1..``max_degree`` that fit in memory (computed once per cost model,
    graph and ``max_degree``)."""
    known = _IDLE.setdefault(cost, {})
    key = (graph.key, max_degree)
    if key not in known:
        out: dict[int, float] = {}
        for degree in range(1, min(max_degree, cost.cluster.num_devices) + 1):
            fastest = fastest_idle_placement(cost, graph, degree)
            if fastest is not None and fastest[1].fits:
                out[degree] = fastest[1].iteration_s
        known[key] = out
    return known[key]


def fastest_iteration_s(cost: CostModel, graph) -> float:
    """The shortest iteration of the fastest placements of degree 1..16 on the idle cluster (inf: fits nowhere)."""
    return min(idle_iteration_s(cost, graph).values(), default=math.inf)


def servable(job: Job, fastest_jct_s: float) -> bool:
    """True when ``job``'s fastest placement on the idle cluster (``fastest_jct_s``), started at its arrival,
    meets its deadline: the job is *avoidable*, some policy could accept it.
    The simulator decides it once, at arrival, the same for every policy (with a queue, the others leave at once
    with reason ``deadline`` or ``out_of_memory``; in the loss system every policy's placement of them fails)."""
    return job.arrival_s + job.deadline_s - fastest_jct_s >= job.arrival_s - 1e-9 * max(1.0, job.deadline_s)
