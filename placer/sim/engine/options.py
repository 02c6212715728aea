"""The compiled option table and decision programs: the placement rules of :mod:`placer.cluster.placement`, the
shapes of :mod:`placer.cost.tables` as exact keys, and the heuristics of :mod:`placer.baselines.heuristics` as arrays."""

from __future__ import annotations

import numpy as np

from .codes import (  # the kernels read them as compile-time constants
    BEST_FIT,
    EFFICIENT,
    FIRST_FIT,
    KEY_BITS,
    LEAN,
    N_STATE,
    P_CAP,
    P_FIXED,
    P_KIND,
    P_MAX_DEGREE,
    P_NRULES,
    P_RULES,
    PARA_MAX,
    PARA_MIN,
    Q_ADMIT,
    Q_ADMIT_FREE,
    Q_EFF,
    Q_QUIET,
    Q_TIE,
    S_NFREE,
    S_NNEED,
    S_NSHAPES,
    S_NSIZES,
    S_NWAIT,
    S_VERSION,
    SWITCH,
    TOLERANCE,
)
from .jit import kernel
from .shapes import shape_id


# -- placement rules on the free devices ----------------------------------------------------------------------------
@kernel
def free_runs(free, server_of, ids, run_start, run_count, place):
    """The free device ids ascending (``ids``), each server's run of them (start, count, server) and each free id's run
    (``place``); returns (number free, number of runs)."""
    n_free, n_runs, last = 0, 0, -1
    for d in range(free.shape[0]):
        if free[d]:
            s = server_of[d]
            if s != last:
                run_start[n_runs], run_count[n_runs] = n_free, 0
                n_runs += 1
                last = s
            run_count[n_runs - 1] += 1
            ids[n_free] = d
            place[n_free] = n_runs - 1
            n_free += 1
    return n_free, n_runs


@kernel
def runs_by_free(run_count, n_runs, order):
    """The runs most free first, ties to the lower (a stable sort by count, descending), into ``order[:n_runs]``: what
    ``best_fit`` fills a job no one server holds from. Insertion sort: a handful of servers, no allocation."""
    for k in range(n_runs):
        at = k
        while at > 0 and run_count[order[at - 1]] < run_count[k]:
            order[at] = order[at - 1]
            at -= 1
        order[at] = k


@kernel
def rule_positions(rule, degree, n_free, n_runs, run_start, run_count, order, take, out):
    """Positions (ascending, into the free ids) of ``degree`` devices by ``rule``
    (:func:`placer.cluster.placement.rule_indices`) into ``out``; False when fewer are free. ``order``: the runs most free
    first (:func:`runs_by_free`); ``take`` (n_runs,): scratch, each run's share. No allocation: a table calls it once
    per degree and rule."""
    if degree > n_free:
        return False
    if rule == FIRST_FIT:
        for i in range(degree):
            out[i] = i
        return True
    if rule == BEST_FIT:
        holder, tight = -1, 1 << 62
        for k in range(n_runs):  # the tightest server that holds it, ties to the lower
            if degree <= run_count[k] < tight:
                holder, tight = k, run_count[k]
        if holder >= 0:
            for i in range(degree):
                out[i] = run_start[holder] + i
            return True
        left = degree
        for k in range(n_runs):  # whole runs most free first, the last one's first devices
            take[order[k]] = min(run_count[order[k]], left)
            left -= take[order[k]]
    else:  # SPREAD: round-robin over servers, one device each per round: complete rounds, then the first runs left
        depth, taken = 0, 0
        while True:
            more = 0
            for k in range(n_runs):
                more += run_count[k] > depth
            if taken + more > degree:
                break
            taken += more
            depth += 1
            if taken == degree:
                break
        left = degree - taken
        for k in range(n_runs):
            take[k] = min(run_count[k], depth)
            if left > 0 and run_count[k] > depth:
                take[k] += 1
                left -= 1
    n = 0
    for k in range(n_runs):  # each run's share, in device order: ascending
        for i in range(take[k]):
            out[n] = run_start[k] + i
            n += 1
    return True


@kernel
def shape_key(positions, degree, ids, place, dev_rate, dev_kind, dev_mem, n_mem, counts):
    """A placement's shape as an exact key: its devices per server largest first (a partition, in bits), the kind of
    its slowest device (the first of the lowest rate) and its smallest memory (:class:`~placer.cost.shape.PlacementShape`)."""
    n_parts, last = 0, -1
    slowest, mem = ids[positions[0]], n_mem
    for i in range(degree):
        d = ids[positions[i]]
        if place[positions[i]] != last:
            counts[n_parts] = 0
            n_parts += 1
            last = place[positions[i]]
        counts[n_parts - 1] += 1
        if dev_rate[d] < dev_rate[slowest]:
            slowest = d
        mem = min(mem, dev_mem[d])
    return partition_key(counts, n_parts, dev_kind[slowest] * (n_mem + 1) + mem)


@kernel
def partition_key(counts, n_parts, kinds):
    """The key of a partition (``counts[:n_parts]``, sorted here largest first) and the slowest device's kinds code."""
    for i in range(1, n_parts):  # largest first (insertion sort: a handful of parts)
        value, at = counts[i], i
        while at > 0 and counts[at - 1] < value:
            counts[at] = counts[at - 1]
            at -= 1
        counts[at] = value
    w0, w1, w2, bit = 0, 0, 0, 0
    for p in range(n_parts):
        for _ in range(counts[p]):
            word, shift = bit // KEY_BITS, bit % KEY_BITS
            if word == 0:
                w0 |= 1 << shift
            elif word == 1:
                w1 |= 1 << shift
            else:
                w2 |= 1 << shift
            bit += 1
        bit += 1  # a zero ends each part
    return (w0, w1, w2, kinds)


# -- the option table -----------------------------------------------------------------------------------------------
@kernel
def build_table(g, limit, rules, n_rules, iters, ist, free, server_of, dev_rate, dev_kind, dev_mem, n_mem, slots, keys, rep_dev,
                rep_deg, price, fits, need_g, need_s, w):
    """The options of graph ``g`` at degrees 1..``limit`` x ``rules[:n_rules]``, degree-major (the reference's
    :class:`~placer.sim.options.OptionTable`), into the work arrays ``w`` (:class:`Work`). Returns the number of
    options, -1 when prices are wanted (``need_g``/``need_s``; ``ist[S_NNEED]`` of them) or -2 when the shape table is
    full."""
    signature = rules[0] * 9 + (rules[1] * 3 if n_rules > 1 else 0) + (rules[2] if n_rules > 2 else 0)
    if not (w.meta[0] == ist[S_VERSION] and w.meta[1] == limit and w.meta[2] == n_rules and w.meta[3] == signature):
        n = _structure(limit, rules, n_rules, ist, free, server_of, dev_rate, dev_kind, dev_mem, n_mem, slots, keys, rep_dev, rep_deg, w)
        if n < 0:
            return -2
        w.meta[0], w.meta[1], w.meta[2], w.meta[3], w.meta[4] = ist[S_VERSION], limit, n_rules, signature, n
    n = w.meta[4]
    ist[S_NNEED] = 0
    for i in range(n):
        w.jct[i], w.fits[i] = np.inf, False
        sid = w.shape[i]
        if sid < 0:
            continue
        if np.isnan(price[g, sid]):
            k = ist[S_NNEED]
            need_g[k], need_s[k] = g, sid
            ist[S_NNEED] += 1
        elif fits[g, sid]:
            w.fits[i] = True
            w.jct[i] = price[g, sid] * iters
    return -1 if ist[S_NNEED] > 0 else n


@kernel
def _structure(limit, rules, n_rules, ist, free, server_of, dev_rate, dev_kind, dev_mem, n_mem, slots, keys, rep_dev, rep_deg, w):
    """The table's placements on the free devices (positions, repeats, shape ids; new shapes keyed): its number of
    options, or -1 when the shape table is full. It depends on the free devices alone, not on the job."""
    ids, place, run_start, run_count = w.ids, w.place, w.run_start, w.run_count
    n_free, n_runs = free_runs(free, server_of, ids, run_start, run_count, place)
    runs_by_free(run_count, n_runs, w.order)
    n = 0
    for degree in range(1, limit + 1):
        for r in range(n_rules):
            w.deg[n], w.valid[n], w.repeat[n], w.shape[n] = degree, False, False, -1
            if rule_positions(rules[r], degree, n_free, n_runs, run_start, run_count, w.order, w.take, w.pos[n]):
                w.valid[n] = True
                for earlier in range(n - r, n):  # an earlier rule's same devices at this degree
                    if w.valid[earlier] and _same(w.pos[earlier], w.pos[n], degree):
                        w.repeat[n] = True
                        break
                key = shape_key(w.pos[n], degree, ids, place, dev_rate, dev_kind, dev_mem, n_mem, w.scratch)
                known = ist[S_NSHAPES]
                sid = shape_id(key, ist, slots, keys)
                if sid < 0:
                    w.meta[0] = -1
                    return -1
                if sid == known:  # a new shape: these devices stand for it
                    rep_deg[sid] = degree
                    for i in range(degree):
                        rep_dev[sid, i] = ids[w.pos[n, i]]
                w.shape[n] = sid
            n += 1
    return n


@kernel
def _same(a, b, n):
    """``np.array_equal(a[:n], b[:n])`` without its temporaries."""
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


@kernel
def meets(jct, deadline):
    """meets_deadline for a finite JCT (an option without devices or memory has JCT inf: never)."""
    return np.isfinite(jct) and jct <= deadline * (1 + TOLERANCE)


@kernel
def thriftiest(n, deadline, tie, w):
    """``lean``'s option (:meth:`~placer.sim.options.OptionTable.thriftiest`): -1 when none is feasible."""
    least = np.inf
    for i in range(n):
        if not w.repeat[i] and meets(w.jct[i], deadline):
            least = min(least, w.deg[i] * w.jct[i])
    if least == np.inf:
        return -1
    best = -1
    for i in range(n):
        if w.repeat[i] or not meets(w.jct[i], deadline):
            continue
        seconds = w.deg[i] * w.jct[i]
        if seconds > least * (1 + tie):
            continue
        if best < 0 or w.deg[i] < w.deg[best] or (w.deg[i] == w.deg[best] and (w.jct[i] < w.jct[best] or (
            w.jct[i] == w.jct[best] and seconds < w.deg[best] * w.jct[best]))):
            best = i  # the fewest devices, then the shortest JCT, then the fewest device-seconds, then the first
    return best


# -- decision programs (placer.baselines.heuristics, as arrays) -----------------------------------------------------
@kernel
def large(j, pf, ist, seq_jct, seen, sizes):
    """Lean's size admission (``Lean._large``): True when job ``j`` should wait."""
    record(j, ist, seq_jct, seen, sizes)
    n = ist[S_NSIZES]
    threshold = sizes[min(n - 1, int(pf[Q_ADMIT] * n))]
    if seq_jct[j] <= threshold:
        return False
    return ist[S_NWAIT] > 1 or ist[S_NFREE] < pf[Q_ADMIT_FREE] * free_total(ist)


@kernel
def record(j, ist, seq_jct, seen, sizes):
    """Job ``j``'s sequential JCT among the sizes seen (ascending, ``ist[S_NSIZES]`` of them), once."""
    if not seen[j]:
        seen[j] = True
        n, size = ist[S_NSIZES], seq_jct[j]
        low, high = 0, n
        while low < high:  # bisect.insort: after every equal size
            middle = (low + high) // 2
            if size < sizes[middle]:
                high = middle
            else:
                low = middle + 1
        for i in range(n, low, -1):
            sizes[i] = sizes[i - 1]
        sizes[low] = size
        ist[S_NSIZES] = n + 1


@kernel
def quiet(pf, ist):
    """Switch's quiet cluster: at most the offered job waits and more than its share of devices is free."""
    return ist[S_NWAIT] <= 1 and ist[S_NFREE] > pf[Q_QUIET] * free_total(ist)


@kernel
def free_total(ist):
    return ist[N_STATE - 1]  # the cluster's number of devices, set once


@kernel
def decide(j, pi, pf, ist, deadline, c, w, seen, sizes):
    """Program ``pi``/``pf``'s decision for job ``j`` with ``deadline`` seconds left: the chosen option's index, -1 to
    reject, -2 when prices are wanted, -3 when the shape table is full. ``c``: the run's arrays (:class:`Arrays`);
    ``seen``, ``sizes`` (and ``ist[S_NSIZES]``): the program's own record of the jobs it was offered (lean's admission)."""
    kind, n_devices = pi[P_KIND], free_total(ist)
    limit = min(pi[P_MAX_DEGREE], n_devices)
    if kind == LEAN or kind == SWITCH:
        if kind == LEAN or not quiet(pf, ist):
            if pf[Q_ADMIT] >= 0 and large(j, pf, ist, c.seq_jct, seen, sizes):
                return -1
            cap = pi[P_CAP] if pi[P_CAP] > 0 else pi[P_MAX_DEGREE]
            n = _table(j, min(min(pi[P_MAX_DEGREE], cap), n_devices), pi[P_RULES:], pi[P_NRULES], ist, c, w)
            return n if n < -1 else thriftiest(n, deadline, pf[Q_TIE], w)
    n = _table(j, limit, pi[P_RULES:], 1, ist, c, w)
    if n < -1:
        return n
    if kind == EFFICIENT:
        return _efficient(n, deadline, pf[Q_EFF], c.seq_jct[j], w)
    if kind == PARA_MIN or kind == SWITCH:  # the first feasible; a quiet switch: the last (the widest)
        chosen = -1
        for i in range(n):
            if meets(w.jct[i], deadline):
                if kind == PARA_MIN:
                    return i
                chosen = i
        return chosen
    if kind == PARA_MAX:
        for i in range(n - 1, -1, -1):
            if w.fits[i]:
                return i
        return -1
    k = pi[P_FIXED]  # FIXED
    return k - 1 if 1 <= k <= limit and w.valid[k - 1] else -1


@kernel
def _efficient(n, deadline, efficiency, seq, w):
    """``eff:E``: the last feasible option at least that efficient, else the first feasible one."""
    first, last = -1, -1
    for i in range(n):
        if meets(w.jct[i], deadline):
            if first < 0:
                first = i
            if seq >= efficiency * w.deg[i] * w.jct[i]:
                last = i
    return last if last >= 0 else first


@kernel
def _table(j, limit, rules, n_rules, ist, c, w):
    n = build_table(c.graph[j], limit, rules, n_rules, c.iters[j], ist, c.free, c.server_of, c.dev_rate, c.dev_kind, c.dev_mem,
                    c.n_mem[0], c.slots, c.shape_keys, c.rep_dev, c.rep_deg, c.price, c.fits, c.need_g, c.need_s, w)
    return -2 if n == -1 else -3 if n == -2 else n
