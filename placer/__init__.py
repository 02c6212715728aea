"""placer: partition and place deep-learning training jobs on a shared GPU cluster.

Core library (no torch, no gymnasium): job graphs, cluster specs, the cost model, the
discrete-event simulator, heuristic policies and offline evaluation.
"""

from placer.api import ClusterState, PlacementDecision, PlacementPrediction, Placer, place, predict
from placer.baselines.registry import make_heuristic
from placer.calibration import calibrate
from placer.cluster.topology import Cluster, ClusterSpec, load_cluster
from placer.common.errors import ClusterSpecError, GraphValidationError, PlacerError, PolicyError, WorkloadError
from placer.cost import CostModel, PlacementShape, Prediction, Strategy
from placer.graphs.catalog import resolve_graph, shipped_graph_names
from placer.graphs.job_graph import JobGraph, load_job_graph
from placer.graphs.pipedream import load_pipedream
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.sim.simulator import Simulator
from placer.sim.state import ClusterView
from placer.sim.types import BlockReason, Job, JobRecord, Outcome, Place, Reject
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload


def from_torch(module, example_inputs, **kwargs) -> JobGraph:
    """Job graph of a PyTorch model (needs torch); see :func:`placer.graphs.torch_import.from_torch`."""
    from placer.graphs.torch_import import from_torch as convert

    return convert(module, example_inputs, **kwargs)


__all__ = [
    "calibrate",
    "BetaDistribution",
    "ClusterState",
    "PlacementDecision",
    "Placer",
    "place",
    "predict",
    "PlacementPrediction",
    "Prediction",
    "Strategy",
    "BlockReason",
    "Cluster",
    "ClusterSpec",
    "ClusterSpecError",
    "ClusterView",
    "CostModel",
    "GraphValidationError",
    "Job",
    "JobGraph",
    "JobRecord",
    "JobSpec",
    "Outcome",
    "Place",
    "PlacementShape",
    "PlacerError",
    "PolicyError",
    "QueueConfig",
    "Reject",
    "Simulator",
    "SizeDistribution",
    "Workload",
    "WorkloadError",
    "from_torch",
    "load_cluster",
    "load_job_graph",
    "load_pipedream",
    "make_heuristic",
    "resolve_graph",
    "shipped_graph_names",
    "simulate",
]
