"""Ray's node records into a placer cluster: hand-written records, exact servers and device types."""

import pytest

from placer.cluster.topology import Cluster, load_cluster
from placer.ray import RayClusterError, RayNode, cluster_spec, nodes_from_ray
from placer.ray.job import bundles
from placer.ray.nodes import RayCluster, device_type_for


def record(node_id, address, gpus, accelerator=None, alive=True):
    resources = {"CPU": 4.0, f"node:{address}": 1.0}
    if gpus:
        resources["GPU"] = float(gpus)
    if accelerator:
        resources[f"accelerator_type:{accelerator}"] = 1.0
    return {"NodeID": node_id, "NodeManagerAddress": address, "Alive": alive, "Resources": resources}


RECORDS = [
    record("bb", "10.0.0.2", 4, "V100"),
    record("aa", "10.0.0.1", 8, "A100"),
    record("cc", "10.0.0.3", 0),  # a CPU-only head: not a server
    record("dd", "10.0.0.4", 8, "A100", alive=False),  # dead: not a server
    record("ab", "10.0.0.1", 2),  # no accelerator type reported
]


def test_nodes_with_gpus_become_servers_in_address_then_id_order():
    assert nodes_from_ray(RECORDS) == (
        RayNode("aa", "10.0.0.1", 8, "A100"),
        RayNode("ab", "10.0.0.1", 2, None),
        RayNode("bb", "10.0.0.2", 4, "V100"),
    )


def test_device_types_come_from_the_accelerator_type_and_links_from_the_template():
    template = load_cluster("mixed").spec
    nodes = nodes_from_ray(RECORDS[:2])
    spec = cluster_spec(nodes, template)
    assert [(s.count, s.devices_per_server, s.device_type) for s in spec.servers] == [(1, 8, "A100-80GB"), (1, 4, "V100-16GB")]
    assert spec.links == template.links and spec.overheads == template.overheads and spec.name == "mixed-ray"
    cluster = RayCluster(Cluster(spec), nodes)
    assert cluster.node_of("s1-g3").node_id == "bb" and cluster.node_of("s0-g7").node_id == "aa"
    with pytest.raises(RayClusterError, match="'s2-g0' is not in the cluster read from Ray"):
        cluster.node_of("s2-g0")


def test_an_unreported_or_unknown_accelerator_needs_a_single_type_template():
    mixed, single = load_cluster("mixed").spec, load_cluster("dgx8x8").spec
    assert device_type_for(RayNode("x", "h", 1, None), single) == "A100-80GB"
    assert device_type_for(RayNode("x", "h", 1, "T4"), single) == "A100-80GB"
    with pytest.raises(RayClusterError, match="reports accelerator T4, which matches none of the cluster file's device types"):
        device_type_for(RayNode("x", "h", 1, "T4"), mixed)
    with pytest.raises(RayClusterError, match="no alive node with a GPU"):
        cluster_spec((), single)


def test_each_device_becomes_a_one_gpu_bundle_pinned_to_its_node():
    from placer.api.types import PlacementDecision

    nodes = nodes_from_ray(RECORDS[:2])
    ray_cluster = RayCluster(Cluster(cluster_spec(nodes, load_cluster("mixed").spec)), nodes)
    decision = PlacementDecision(
        accepted=True, job_id="j", degree=2, devices=["s1-g2", "s0-g0"], predicted_iteration_s=1.0, predicted_jct_s=1.0,
        sequential_jct_s=2.0, deadline_s=2.0, meets_deadline=True, policy="p",
    )  # fmt: skip
    resources, selectors, workers = bundles(decision, ray_cluster)
    assert resources == [{"GPU": 1.0}, {"GPU": 1.0}]
    assert selectors == [{"ray.io/node-id": "bb"}, {"ray.io/node-id": "aa"}]
    assert [(w.rank, w.world_size, w.device, w.node_id) for w in workers] == [(0, 2, "s1-g2", "bb"), (1, 2, "s0-g0", "aa")]


def test_an_unreachable_address_is_one_line_and_exit_2():
    import subprocess
    import sys

    from tests.placer.ray.conftest import REPO

    done = subprocess.run(
        [sys.executable, "-m", "placer", "ray-cluster", "--address", "127.0.0.1:1"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot reach a Ray cluster at '127.0.0.1:1': ") and done.stderr.count("\n") == 1
