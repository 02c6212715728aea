"""Ray carries out placer's decisions: the cluster read from Ray's nodes, placement groups pinned to
the chosen nodes, one worker per device, and measured step times reported back to the service.

Ray is an optional extra (``pip install -e '.[ray]'``): it is imported when a function needs it.
"""

from placer.ray.job import PlacementRefusedError, PlacementTimeoutError, RayJob, Resized, Worker, check_service, place_job
from placer.ray.nodes import RayCluster, RayClusterError, RayNode, cluster_spec, connect, nodes_from_ray
from placer.ray.service import HttpService, LeaseLostError, LocalService, PlacementService, ServiceError

__all__ = [
    "HttpService",
    "LeaseLostError",
    "LocalService",
    "PlacementRefusedError",
    "PlacementService",
    "PlacementTimeoutError",
    "RayCluster",
    "RayClusterError",
    "RayJob",
    "RayNode",
    "Resized",
    "ServiceError",
    "Worker",
    "check_service",
    "cluster_spec",
    "connect",
    "nodes_from_ray",
    "place_job",
]
