"""Job streams of the shipped graphs for the learned policy's decision tests."""

from __future__ import annotations

import numpy as np

from placer.cost import CostModel
from placer.graphs.catalog import resolve_graph
from placer.sim.types import Job
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload
from placer.workloads.structure import Structure


def stream(cost: CostModel, graphs: tuple[str, ...], load: float, jobs: int, seed: int, structure: str = "iid") -> list[Job]:
    """``jobs`` arrivals of ``graphs`` at ``load`` on ``cost``'s cluster (beta C, lengths spread 100-fold), from ``seed``."""
    workload = Workload(
        graphs=[resolve_graph(g) for g in graphs],
        beta=BetaDistribution("C"),
        load=load,
        num_devices=cost.cluster.num_devices,
        num_jobs=jobs,
        sequential_iteration_s=cost.sequential_iteration_s,
        size=SizeDistribution("loguniform:0.1:10"),
        structure=Structure(structure),
    )
    return list(workload.jobs(np.random.default_rng(seed)))
