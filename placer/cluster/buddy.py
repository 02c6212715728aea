"""Buddy blocks: the topology-aligned device sets of a power-of-two size that ElasticFlow places jobs on.

A block of ``size`` devices is either an aligned run inside one server (devices ``k x size .. (k + 1) x size - 1`` of
the server, for a server of at least ``size`` devices) or, for a size beyond a server, ``size / per_server`` whole
consecutive servers of one server group, aligned at a multiple of that count within the group (so a 16-device block on
8-device servers is servers 0-1, 2-3, ...). Two blocks of one size never overlap, and a block of size ``2s`` is the union
of two blocks of size ``s`` (its buddies): jobs that grow and shrink by halves keep the free devices in aligned blocks,
and a job's block never straddles servers unless it needs whole servers (ElasticFlow, ASPLOS'23, section 4.4).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from placer.cluster.topology import Cluster

_BLOCKS: WeakKeyDictionary[Cluster, dict[int, tuple[tuple[int, ...], ...]]] = WeakKeyDictionary()


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (inclusive)."""
    out, size = [], 1
    while size <= limit:
        out.append(size)
        size *= 2
    return out


def buddy_blocks(cluster: Cluster, size: int) -> tuple[tuple[int, ...], ...]:
    """Every block of ``size`` devices of ``cluster`` (module docstring), in device order; empty when none exists (a size
    that is not a power of two, or that no server or group of whole servers divides). Computed once per cluster and size."""
    known = _BLOCKS.setdefault(cluster, {})
    if size not in known:
        known[size] = _blocks(cluster, size) if size >= 1 and size & (size - 1) == 0 else ()
    return known[size]


def _blocks(cluster: Cluster, size: int) -> tuple[tuple[int, ...], ...]:
    out: list[tuple[int, ...]] = []
    server = 0
    for group in cluster.spec.servers:
        servers = range(server, server + group.count)
        server += group.count
        per = group.devices_per_server
        if size <= per:
            for s in servers:
                devices = cluster.devices_of_server[s]
                out += [tuple(devices[k * size : (k + 1) * size]) for k in range(per // size)]
        elif size % per == 0:
            span = size // per
            for first in range(0, group.count - span + 1, span):
                out.append(tuple(d for s in servers[first : first + span] for d in cluster.devices_of_server[s]))
    return tuple(out)
