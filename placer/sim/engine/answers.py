"""The caller's decisions in the compiled engine: a policy that decides in Python (an EXTERNAL program) answers with
devices, which are checked and keyed here as the reference simulator checks and prices a ``Place``."""

from __future__ import annotations

import numpy as np

from .codes import S_NNEED, S_NSHAPES
from .jit import kernel
from .options import partition_key
from .shapes import shape_id


# -- the caller's decisions (an EXTERNAL program: a learned policy, a planner) --------------------------------------
@kernel
def external_answer(j, ist, c, w):
    """The caller's answer to job ``j``, as ``decide`` gives it: -1 to reject; 0 to place on the devices it wrote at
    ``w.ids[:w.deg[0]]`` (in its order; ``w.pos[0]`` the identity), their shape keyed into ``w.shape[0]``; -5 when they
    are no placement (none, repeated, unknown or busy: ``no_capacity``); -2 / -3 when prices or shape room are wanted.
    The answer overwrote the table ``w`` held (a screening program's): it is marked stale."""
    w.meta[0] = -1
    degree = w.deg[0]
    if degree < 0:
        return -1
    n = c.free.shape[0]
    if degree == 0:
        return -5
    for i in range(degree):
        d = w.ids[i]
        if d < 0 or d >= n or not c.free[d]:
            return -5
        for e in range(i):
            if w.ids[e] == d:
                return -5
    key = devices_key(w.ids, degree, c.server_of, c.dev_rate, c.dev_kind, c.dev_mem, c.n_mem[0], w.scratch, w.run_count)
    known = ist[S_NSHAPES]
    sid = shape_id(key, ist, c.slots, c.shape_keys)
    if sid < 0:
        return -3
    if sid == known:  # a new shape: these devices stand for it
        c.rep_deg[sid] = degree
        for i in range(degree):
            c.rep_dev[sid, i] = w.ids[i]
    w.shape[0] = sid
    g = c.graph[j]
    if np.isnan(c.price[g, sid]):
        c.need_g[0], c.need_s[0] = g, sid
        ist[S_NNEED] = 1
        return -2
    return 0


@kernel
def devices_key(devices, degree, server_of, dev_rate, dev_kind, dev_mem, n_mem, counts, servers):
    """:func:`shape_key` of a device list in any order (its slowest device: the first of the lowest rate in that order)."""
    slowest, mem = devices[0], n_mem
    for i in range(degree):
        servers[i] = server_of[devices[i]]
        if dev_rate[devices[i]] < dev_rate[slowest]:
            slowest = devices[i]
        mem = min(mem, dev_mem[devices[i]])
    for i in range(1, degree):  # the servers ascending (insertion sort: no allocation)
        value, at = servers[i], i
        while at > 0 and servers[at - 1] > value:
            servers[at] = servers[at - 1]
            at -= 1
        servers[at] = value
    n_parts = 0
    for i in range(degree):
        if i == 0 or servers[i] != servers[i - 1]:
            counts[n_parts] = 0
            n_parts += 1
        counts[n_parts - 1] += 1
    return partition_key(counts, n_parts, dev_kind[slowest] * (n_mem + 1) + mem)
