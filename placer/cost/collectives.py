"""Collectives over a two-level topology: NVLink-class links inside a server, NICs between.

A group of ``n`` devices holds ``counts[i]`` of them on server ``i`` (``k`` servers,
``c_max = max(counts)``, ``c_min = min(counts)``). Inside a server each device has a port of
``B_intra`` bytes/s (latency ``L_intra``); each server has ``nics`` NICs of ``B_nic`` bytes/s
(latency ``L_inter``), of which a server with ``c`` group members uses ``min(c, nics)``.

Hierarchical ring **all-reduce** of ``S`` bytes (every member ends with the sum)::

    AR(S) = [c_max > 1] (2 (c_max - 1) L_intra + 2 (c_max - 1) / c_max * S / B_intra)
          + [k > 1]     (2 (k - 1) L_inter    + 2 (k - 1) / k * S / (min(c_min, nics) B_nic))

i.e. a reduce-scatter and an all-gather ring inside each server (the largest server paces
them) around a ring all-reduce between servers in which every device sends its ``S / c``
shard through its share of the NICs (the server with the fewest members, hence fewest NICs
in use, paces it). NCCL's hierarchical and tree algorithms have the same bandwidth terms.

**Point-to-point** send of ``S`` bytes: ``L + S / B`` over NVLink inside a server, over one
NIC between servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placer.cluster.topology import Cluster


@dataclass(frozen=True)
class Fabric:
    """Link parameters of a cluster (bytes/s and seconds)."""

    intra_Bps: float
    intra_latency_s: float
    nic_Bps: float
    nics_per_server: int
    inter_latency_s: float

    @classmethod
    def of(cls, cluster: Cluster) -> Fabric:
        links = cluster.spec.links
        return cls(
            links.intra_server.bandwidth_Bps,
            links.intra_server.latency_s,
            links.inter_server.bandwidth_Bps,
            links.inter_server.nics_per_server,
            links.inter_server.latency_s,
        )


def allreduce_s(size_bytes: float, counts: Sequence[int], fabric: Fabric, concurrent: int = 1) -> float:
    """Seconds of a hierarchical ring all-reduce of ``size_bytes`` over a group (module docstring).

    ``concurrent`` groups of the same layout run at once and share each server's NICs (the
    ``tp`` data-parallel groups of a hybrid job): each gets ``min(c_min * concurrent, nics) / concurrent`` NICs.
    """
    servers = len(counts)
    c_max, c_min = max(counts), min(counts)
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
