"""A placer cluster read from a running Ray cluster's nodes.

Ray tells how many GPUs each node has and, where it knows, their accelerator type (the
``accelerator_type:A100`` resource); it cannot tell the links between GPUs or their memory, so
those come from a cluster file (the *template*): its links, overheads and device types. Each
Ray node with a GPU becomes one server of the placer cluster, in a fixed order (by address, then
node id), so device ``s<k>-g<i>`` is a GPU of the k-th node. Which GPU of the node (its CUDA
index) is Ray's to assign: placer picks nodes and counts, never GPU indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from placer.cluster.topology import Cluster, ClusterSpec, ServerGroup, load_cluster
from placer.common.errors import RayClusterError
from placer.common.on_ray import import_ray, join

ACCELERATOR_PREFIX = "accelerator_type:"


@dataclass(frozen=True)
class RayNode:
    """One alive Ray node with GPUs: its id, address, GPU count and accelerator type (None: not reported)."""

    node_id: str
    address: str
    gpus: int
    accelerator: str | None = None


@dataclass(frozen=True)
class RayCluster:
    """A placer :class:`Cluster` whose server ``k`` is Ray node ``nodes[k]``."""

    cluster: Cluster
    nodes: tuple[RayNode, ...]

    def node_of(self, device: str) -> RayNode:
        """The Ray node that holds ``device`` (a name like ``s1-g0``)."""
        index = self.cluster.device_index.get(device)
        if index is None:
            raise RayClusterError(f"device {device!r} is not in the cluster read from Ray ({self.cluster.num_devices} devices)")
        return self.nodes[int(self.cluster.server_of[index])]


def nodes_from_ray(records: list[dict]) -> tuple[RayNode, ...]:
    """The alive nodes with at least one GPU among ``ray.nodes()`` records, in placer's server order."""
    nodes = []
    for record in records:
        resources = record.get("Resources", {})
        gpus = int(resources.get("GPU", 0))
        if not record.get("Alive", False) or gpus < 1:
            continue
        accelerators = sorted(k[len(ACCELERATOR_PREFIX) :] for k in resources if k.startswith(ACCELERATOR_PREFIX))
        nodes.append(RayNode(record["NodeID"], record.get("NodeManagerAddress", ""), gpus, accelerators[0] if accelerators else None))
    return tuple(sorted(nodes, key=lambda n: (n.address, n.node_id)))


def device_type_for(node: RayNode, template: ClusterSpec) -> str:
    """The template's device type for ``node``: the one whose name or model starts with Ray's accelerator type,
    else the template's only device type."""
    types = template.device_types
    if node.accelerator is not None:
        wanted = node.accelerator.upper()
        for name, dtype in types.items():
            if name.upper().startswith(wanted) or (dtype.model or "").upper().startswith(wanted):
                return name
    if len(types) == 1:
        return next(iter(types))
    raise RayClusterError(
        f"Ray node {node.node_id[:12]} reports accelerator {node.accelerator or '(none)'}, which matches none of the cluster file's "
        f"device types ({', '.join(types)}): name it in a device type's name or model"
    )


def cluster_spec(nodes: tuple[RayNode, ...], template: ClusterSpec, *, name: str | None = None) -> ClusterSpec:
    """A cluster spec with one server per Ray node, links, overheads, device types and resize costs from ``template``."""
    if not nodes:
        raise RayClusterError("the Ray cluster has no alive node with a GPU (start nodes with --num-gpus)")
    servers = [ServerGroup(count=1, devices_per_server=n.gpus, device_type=device_type_for(n, template)) for n in nodes]
    used = {s.device_type for s in servers}
    return ClusterSpec(
        name=name or f"{template.name}-ray",
        device_types={k: v for k, v in template.device_types.items() if k in used},
        servers=servers,
        links=template.links,
        overheads=template.overheads,
        jobs=template.jobs,
        resize=template.resize,
    )


def connect(address: str | None = None, template: str | Path | ClusterSpec = "pacml", *, name: str | None = None) -> RayCluster:
    """Join the Ray cluster at ``address`` (None: the one this process runs in, or ``RAY_ADDRESS``) and read its nodes.

    ``template``: the cluster file (preset name, TOML path or spec) whose links and device types describe the nodes.
    """
    join(address)
    ray = import_ray()
    spec = template if isinstance(template, ClusterSpec) else load_cluster(template).spec
    nodes = nodes_from_ray(ray.nodes())
    return RayCluster(Cluster(cluster_spec(nodes, spec, name=name)), nodes)
