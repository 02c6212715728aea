"""Evaluations whose numbers mean nothing, said in words: no job served by any policy, every job unavoidable, a
policy's mean JCT that is NaN (it served no job), a throughput of 0 from jobs that ended after the measurement window.
Each warning names the cause where one can be found, e.g. a graph that no placement of the cluster has memory for.

The checks read only the runs; the cause is looked for (the cluster and graphs loaded again) only when one fires.
"""

from __future__ import annotations

import math

from placer.common.errors import PlacerError
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.results import EvaluationResult


def meaningless(result: EvaluationResult) -> list[str]:
    """One line per way ``result``'s tables mean nothing, each with its cause when one is found (empty: they mean something)."""
    runs = [r for r in result.runs if r.get("jobs")]
    if not runs:
        return ["no run decided any job: every table is empty or NaN"] if result.runs else []
    served_none = all(r["accepted"] == 0 for r in runs)
    unavoidable = all(r.get("unavoidable_share") == 1.0 for r in runs)  # absent in results older than the measure
    if served_none or unavoidable:
        what = (
            "no policy served any job (blocking 1.000 and JCT nan everywhere)"
            if served_none
            else "every job was unavoidable (avoidable blocking 0 everywhere: the policies compare nothing)"
        )
        return [f"{what}: {cause(result.config, unavoidable)}"]
    lines = []
    for policy in result.config.policies:
        where = [r for r in result.summary() if r["policy"] == policy and math.isnan(r["mean_jct_s"])]
        if where:
            settings = ", ".join(_setting(result.config, r) for r in where)
            lines.append(f"{policy} served no job ({settings}): its mean JCT is nan")
    if empty := [r for r in runs if r["accepted"] and not r.get("completed_in_window", 1)]:
        policies = ", ".join(dict.fromkeys(r["policy"] for r in empty))
        shortest = min(r.get("window_s", math.nan) for r in empty)
        widen = "a longer trace" if result.config.trace else "more --jobs or a lower --load"
        lines.append(
            f"jobs/hour is 0 in {len(empty)} of {len(runs)} runs ({policies}): none of the jobs they accepted completed within the "
            f"stream's measurement window (the shortest {shortest:.3g} s); {widen} widens it"
        )
    return lines


def cause(config: EvaluationConfig, unavoidable: bool) -> str:
    """Why no job could be served: the graphs no placement of up to ``max_degree`` devices has memory for, else (every
    job unavoidable) deadlines no placement meets, else the policies' own choice."""
    try:
        homeless = _homeless(config)
    except PlacerError as exc:  # a cluster or graph file moved since: say so rather than guess
        return f"cannot look for the cause ({exc})"
    if homeless:
        return "; ".join(homeless)
    if unavoidable:
        return f"no job's fastest placement on the idle cluster meets its deadline (beta {', '.join(config.beta_labels)})"
    return "every policy declined every job, though some placement fits and meets its deadline"


def _homeless(config: EvaluationConfig) -> list[str]:
    """A line per graph of the workload that fits on no placement of the cluster (up to ``max_degree`` devices)."""
    from placer.cluster.topology import load_cluster
    from placer.cost import CostModel
    from placer.graphs.catalog import resolve_graph, resolve_graphs
    from placer.sim.fastest import idle_iteration_s
    from placer.workloads.generator import read_trace

    cluster = load_cluster(config.cluster)
    graphs = resolve_graphs(list(config.workload.graphs) or None, config.graphs_dir)
    if config.trace:
        specs = read_trace(config.trace, {g.name: g for g in graphs}, resolve_graph)
        graphs = list({spec.graph.key: spec.graph for spec in specs}.values())
    cost = CostModel(cluster, strategy=config.strategy)
    degree = min(config.max_degree, cluster.num_devices)
    largest = float(cluster.memory_bytes.max())
    lines = []
    for graph in graphs:
        if not idle_iteration_s(cost, graph, config.max_degree):
            state = cost.compile(graph).state_bytes
            lines.append(
                f"no device of cluster {cluster.name!r} has memory for graph {graph.name!r}, nor any placement of up to {degree} "
                f"of them (its training state {_gb(state)}, the largest device {_gb(largest)})"
            )
    return lines


def _setting(config: EvaluationConfig, row: dict) -> str:
    load = f" load {row['load']}" if len(config.load_values) > 1 else ""
    return f"beta {row['beta_dist']}{load}"


def _gb(size: float) -> str:
    return f"{size / 1e9:.3g} GB"
