"""A placement session: one policy asked about one job after another, keeping what it learns.

    placer_ = placer.Placer.open("pacml", "lean:admit=0.5")
    first = placer_.place(graph, beta=0.3)      # the policy sees this job...
    second = placer_.place(other, beta=0.3)     # ...and this one as the next of the same stream

:func:`placer.place` answers each query with a fresh session, so its answer depends on its
arguments only; a :class:`Placer` is for callers who want the online statistics (the service).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

from placer.api.types import ClusterState, PlacementDecision, Reason
from placer.baselines.guard import Guarded
from placer.baselines.policy import Policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.cluster.placement import PLACEMENT_RULES
from placer.cluster.topology import Cluster, load_cluster
from placer.common.errors import PolicyError, QueryError
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.options import DEFAULT_MAX_DEGREE, degrees_for, options
from placer.sim.state import ClusterView
from placer.sim.types import Job, Place, meets_deadline


class Placer:
    """Placement queries on one cost model, answered by one policy kept across them.

    A policy that learns the workload online (lean's size quantiles, the learned policy's job
    history) sees each query as the next job of one stream, so the same query can get another
    answer later. The policy is reset (seeded with ``seed``) when the session starts. Not
    thread-safe: one query at a time (the service asks under its lock). ``cost`` may be swapped
    between queries (the service does after a refit).
    """

    def __init__(self, cost: CostModel, policy: Policy, *, seed: int = 0, max_degree: int = DEFAULT_MAX_DEGREE) -> None:
        if type(policy).tuned is not Policy.tuned:  # best, single-best, adaptive, lean:admit=best, a gate: chosen per workload
            instead = (
                "learned or learned:NAME"
                if isinstance(policy, Guarded)
                else f"the member it chose (placer report names it), e.g. {'elastic_' if policy.elastic else ''}lean:admit=0.9"
            )
            raise PolicyError(
                f"{policy.name} is tuned on the generated streams of a workload (placer evaluate does it), so it cannot answer "
                f"placement queries: use {instead}"
            )
        self.cost, self.policy, self.max_degree = cost, policy, max_degree
        policy.reset(np.random.default_rng(seed))
        self._job_ids = itertools.count()

    @classmethod
    def open(
        cls, cluster: Cluster | str, policy: Policy | str = "lean", *, policy_file: str | Path | None = None, strategy: str = "auto"
    ) -> Placer:
        """A session on ``cluster`` (a :class:`Cluster`, preset name or file) with ``policy`` (a name or object)."""
        topology = load_cluster(cluster) if isinstance(cluster, str) else cluster
        if isinstance(policy, str):
            policy = make_policy(policy, PolicyContext(topology, policy_file=Path(policy_file) if policy_file else None))
        return cls(CostModel(topology, strategy=strategy), policy)

    def place(
        self, graph: JobGraph, state: ClusterState | dict | None = None, *, beta: float = 1.0, iterations: int | None = None
    ) -> PlacementDecision:
        """Decide for ``graph`` on the cluster with the busy devices of ``state`` (see :func:`placer.place`)."""
        if isinstance(state, dict):
            state = ClusterState.model_validate(state)
        free, free_in = occupancy(self.cost.cluster, state)
        return self.decide(graph, free, free_in, beta=beta, iterations=iterations)

    def decide(
        self, graph: JobGraph, free: np.ndarray, free_in: np.ndarray, *, beta: float, iterations: int | None = None, running: int = 0
    ) -> PlacementDecision:
        """Ask the policy about one job on a cluster with the given occupancy (nothing is reserved).

        ``free``: a mask of the free devices; ``free_in``: seconds until each busy one frees;
        ``running``: how many jobs hold devices. A placement is accepted only when it fits, uses
        free devices and meets the deadline; a rejection says why (see :func:`placer.place`).
        """
        if not (isinstance(beta, int | float) and 0 < beta <= 1):
            raise QueryError(f"beta must be in (0, 1], got {beta!r}")
        check_iterations(iterations)
        iterations = iterations or graph.iterations
        seq = self.cost.sequential_jct_s(graph, iterations)
        job = Job(next(self._job_ids), graph, 0.0, float(beta), iterations, seq)  # each query a new job of the session's stream
        view = ClusterView(self.cost, 0.0, free, free_in, running)
        choice = self.policy.decide(job, view)
        if isinstance(choice, Place) and choice.devices and bool(free[list(choice.devices)].all()):
            accepted = self._accepted(job, choice.devices)
            if accepted is not None:
                return accepted
        return self._rejected(job, view)

    def _common(self, job: Job) -> dict:
        return {
            "sequential_jct_s": job.sequential_jct_s,
            "deadline_s": job.deadline_s,
            "policy": self.policy.name,
            "graph_key": job.graph.key,
        }

    def _accepted(self, job: Job, devices: tuple[int, ...]) -> PlacementDecision | None:
        """The decision for ``job`` on ``devices``; None unless it fits and meets the deadline."""
        prediction = self.cost.predict(job.graph, devices)
        jct = prediction.iteration_s * job.iterations
        if not prediction.fits or not meets_deadline(jct, job.deadline_s):
            return None
        return PlacementDecision(
            accepted=True,
            degree=len(devices),
            devices=[self.cost.cluster.device_name(d) for d in devices],
            predicted_iteration_s=jct / job.iterations,
            predicted_jct_s=jct,
            meets_deadline=True,
            strategy=prediction.strategy.as_dict() if prediction.strategy else None,
            memory_per_device_bytes=prediction.memory_per_device_bytes,
            comm_s=prediction.comm_s,
            **self._common(job),
            **extrapolation(self.cost.cluster, len(set(self.cost.cluster.server_of[list(devices)].tolist())), jct / job.iterations),
        )

    def _rejected(self, job: Job, view: ClusterView) -> PlacementDecision:
        """A rejection of ``job``, with why and the fastest placement that fits (if any)."""
        table = options(job, view, degrees=degrees_for(view, self.max_degree), rules=tuple(PLACEMENT_RULES))
        fastest = min((o for o in table if o.fits), key=lambda o: (o.jct_s, o.degree), default=None)
        reason: Reason
        if fastest is None:
            reason = "does_not_fit"
        elif not any(o.feasible for o in table):
            reason = "deadline_unreachable"
        else:
            reason = "policy_declined"
        jct = fastest.jct_s if fastest is not None else None
        return PlacementDecision(
            accepted=False,
            degree=0,
            devices=[],
            predicted_iteration_s=jct / job.iterations if jct is not None else None,
            predicted_jct_s=jct,
            meets_deadline=False,
            reason=reason,
            **self._common(job),
        )


def occupancy(cluster: Cluster, state: ClusterState | None) -> tuple[np.ndarray, np.ndarray]:
    """(free mask, seconds until free) arrays from a :class:`ClusterState`."""
    free = np.ones(cluster.num_devices, dtype=bool)
    free_in = np.zeros(cluster.num_devices)
    for name, seconds in (state.busy if state else {}).items():
        if name not in cluster.device_index:
            raise QueryError(f"unknown device {name!r} in cluster state (devices are named like {cluster.device_name(0)!r})")
        if seconds is not None and not (np.isfinite(seconds) and seconds >= 0):
            raise QueryError(f"device {name!r}: seconds until free must be finite and >= 0, got {seconds}")
        free[cluster.device_index[name]] = False
        free_in[cluster.device_index[name]] = seconds if seconds is not None else 0.0
    return free, free_in


def check_iterations(iterations: int | None) -> None:
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise QueryError(f"iterations must be an integer >= 1, got {iterations!r}")


def extrapolation(cluster: Cluster, servers: int, iteration_s: float) -> dict:
    """``extrapolated``, ``calibrated_max_servers`` and ``interval_s`` of a prediction on ``servers`` servers.

    The interval is the calibration's 90th-percentile cross-validated error (each placement shape left
    out), widened in proportion to the servers beyond the most calibrated on: a heuristic, not a
    measured coverage. Uncalibrated clusters (no ``[calibrated]``) get no flag and no interval.
    """
    calibrated = cluster.spec.calibrated
    if calibrated is None:
        return {}
    out: dict = {"extrapolated": servers > calibrated.max_servers, "calibrated_max_servers": calibrated.max_servers}
    if calibrated.cv_p90 is not None and math.isfinite(iteration_s):
        width = calibrated.cv_p90 * max(1.0, servers / calibrated.max_servers)
        out["interval_s"] = [iteration_s / (1 + width), iteration_s / max(1 - width, 0.1)]
    return out
