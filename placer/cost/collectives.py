"""Collectives over a two-level topology: NVLink- or PCIe-class links inside a server, NICs between.

A group of ``n`` devices holds ``counts[i]`` of them on server ``i`` (``k`` servers,
``c_max = max(counts)``, ``c_min = min(counts)``). Inside a server each device has a port of
``B_intra`` bytes/s (latency ``L_intra``); each server has ``nics`` NICs of ``B_nic`` bytes/s
(latency ``L_inter``). Bandwidths are what a collective *delivers*: the file's line rate times
the link's efficiency (:attr:`placer.cluster.topology.Link.delivered`; TCP sockets on Ethernet
reach a fraction of line rate, RDMA nearly all of it). Sizes and times follow NCCL's bus-bandwidth
convention (nccl-tests, PERFORMANCE.md): a ring all-reduce of ``S`` bytes over ``n`` ranks moves
``2 (n - 1) / n * S`` bytes through its slowest link, in ``2 (n - 1)`` steps.

Where every group member on a server has a NIC of its own (``c_min * concurrent <= nics``: DGX-class,
one NIC per GPU), NCCL's rings stay on their rail and the **all-reduce** is hierarchical::

    AR(S) = [c_max > 1] (2 (c_max - 1) L_intra + 2 (c_max - 1) / c_max * S / B_intra)
          + [k > 1]     (2 (k - 1) L_inter    + 2 (k - 1) / k * S / (min(c_min, nics) B_nic))

a reduce-scatter and an all-gather ring inside each server around a ring between servers of
each device's ``S / c`` shard. Where a server's members **share** its NICs (``c_min * concurrent >
nics``: commodity servers, one NIC for 4 GPUs), one flat ring runs over all ``n`` ranks, each
server's NIC carrying the ring's whole ``2 (n - 1) / n * S`` (split over its NICs and the
``concurrent`` groups), paced by its slowest hop::

    AR(S) = 2 (n - 1) max(L_intra, L_inter) + 2 (n - 1) / n * S / min(B_intra, nics B_nic / concurrent)

so four GPUs of two servers pay 1.5x the cross-server bytes of one GPU on each, where the
hierarchical form priced them equal. On one NIC per server with one GPU each the two forms agree.
The flat ring is opt-in (:attr:`Fabric.detailed`, a cluster file with a link ``kind`` or a
``[communication]`` table, docs/clusters.md): without it every all-reduce is hierarchical, a server
with ``c`` members using ``min(c * concurrent, nics)`` NICs, as before the term existed.

**Point-to-point** send of ``S`` bytes: ``L + S / B`` over the intra-server link inside a server,
over one NIC between servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placer.cluster.topology import Cluster


@dataclass(frozen=True)
class Fabric:
    """Delivered link parameters of a cluster (bytes/s and seconds) and the gradient ``overlap`` (0-1, :mod:`data_parallel`)."""

    intra_Bps: float
    intra_latency_s: float
    nic_Bps: float
    nics_per_server: int
    inter_latency_s: float
    overlap: float = 1.0
    detailed: bool = False  # the cluster opts in (ClusterSpec.detailed_comm): flat rings over shared NICs, DDP bucket order

    @classmethod
    def of(cls, cluster: Cluster) -> Fabric:
        links = cluster.spec.links
        return cls(
            links.intra_server.bandwidth_Bps * links.intra_server.delivered,
            links.intra_server.latency_s,
            links.inter_server.bandwidth_Bps * links.inter_server.delivered,
            links.inter_server.nics_per_server,
            links.inter_server.latency_s,
            cluster.spec.comm.overlap,
            cluster.spec.detailed_comm,
        )


def allreduce_s(size_bytes: float, counts: Sequence[int], fabric: Fabric, concurrent: int = 1) -> float:
    """Seconds of a ring all-reduce of ``size_bytes`` over a group (module docstring): hierarchical where each
    member has a NIC of its own or the fabric is not :attr:`~Fabric.detailed`, one flat ring where members share
    their server's NICs.

    ``concurrent`` groups of the same layout run at once and share each server's NICs (the
    ``tp`` data-parallel groups of a hybrid job): hierarchically each gets ``min(c_min * concurrent, nics) / concurrent`` NICs.
    """
    servers = len(counts)
    c_max, c_min = max(counts), min(counts)
    if fabric.detailed and servers > 1 and c_min * concurrent > fabric.nics_per_server:
        n = sum(counts)
        link = fabric.nics_per_server * fabric.nic_Bps / concurrent
        if c_max > 1:
            link = min(link, fabric.intra_Bps)
        return 2 * (n - 1) * max(fabric.intra_latency_s, fabric.inter_latency_s) + 2 * (n - 1) / n * size_bytes / link
    t = 0.0
    if c_max > 1:
        t += 2 * (c_max - 1) * fabric.intra_latency_s + 2 * (c_max - 1) / c_max * size_bytes / fabric.intra_Bps
    if servers > 1:
        nic = min(c_min * concurrent, fabric.nics_per_server) * fabric.nic_Bps / concurrent
        t += 2 * (servers - 1) * fabric.inter_latency_s + 2 * (servers - 1) / servers * size_bytes / nic
    return t


def p2p_s(size_bytes: float, same_server: bool, fabric: Fabric) -> float:
    """Seconds to send ``size_bytes`` from one device to another."""
    if same_server:
        return fabric.intra_latency_s + size_bytes / fabric.intra_Bps
    return fabric.inter_latency_s + size_bytes / fabric.nic_Bps
