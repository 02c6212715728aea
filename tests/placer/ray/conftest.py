"""A real local Ray cluster (3 nodes, 1 CPU and 2 declared GPUs each) and a placement service on it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from placer.ray.nodes import RayCluster

REPO = Path(__file__).resolve().parents[3]
ACCELERATORS = ("A100", "V100", "V100")


@pytest.fixture(scope="package")
def ray_address():
    """The address of a local Ray cluster this process is connected to; shut down after the package's tests."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)  # workers import this checkout
    base = {"num_cpus": 1, "num_gpus": 2, "include_dashboard": False, "object_store_memory": 80 * 1024 * 1024}
    cluster = Cluster(initialize_head=True, head_node_args={**base, "resources": {f"accelerator_type:{ACCELERATORS[0]}": 1}})
    for accelerator in ACCELERATORS[1:]:
        cluster.add_node(**base, resources={f"accelerator_type:{accelerator}": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield cluster.address
    ray.shutdown()
    cluster.shutdown()


def toy_template():
    from tests.placer.toys import toy_cluster

    return toy_cluster(1, 2).spec


@pytest.fixture(scope="package")
def ray_cluster(ray_address) -> RayCluster:
    from placer.ray import connect

    return connect(ray_address, template=toy_template())


@pytest.fixture(scope="package")
def http_url(ray_cluster):
    """A placer serve (fixed:2 on two nodes, in memory) on ``ray_cluster``'s devices, over loopback HTTP."""
    pytest.importorskip("uvicorn")
    from placer.baselines.registry import make_heuristic
    from placer.serve.http import create_app

    app = create_app(ray_cluster.cluster, make_heuristic("fixed:2+spread"))
    from tests.placer.live_server import loopback, running

    with running(loopback(app)) as port:
        yield f"http://127.0.0.1:{port}"
