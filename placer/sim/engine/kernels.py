"""The compiled stream engine: the event loop of :class:`~placer.sim.simulator.Simulator` and the rule-based decision
programs over priced option tables, in numba (no Python objects inside a run).

Every function here works on arrays that :mod:`placer.sim.engine.stream` allocates and reads back; a run is
*resumable*: :func:`run` returns :data:`NEED` when a decision needs a price (a graph on a placement shape) that the
price book does not hold yet, leaving the job pending; the caller prices it with the cost model and calls :func:`run`
again, which decides the same job afresh. The semantics are the reference simulator's, line by line (the module
docstring of :mod:`placer.sim.simulator`): events ``(time, kind, seq)`` in a heap, completions before arrivals before
expiries at one instant, decision points, offers, the queue's discipline, backfilling and capacity.

Integer state ``ist`` (int64) and float state ``fst`` (float64) hold the scalars, at the indices named below.
"""

from __future__ import annotations

import numpy as np

from .answers import external_answer
from .codes import (  # the kernels read them as compile-time constants
    ACCEPTED,
    APPLIED,
    ARRIVAL,
    ASK,
    BLOCKED,
    COMPLETION,
    DEADLINE,
    DONE,
    EXPIRED,
    EXPIRY,
    EXTERNAL,
    F_NOW,
    GROW,
    LOGGED,
    NEED,
    NO_CAPACITY,
    OUT_OF_MEMORY,
    P_KIND,
    P_NRULES,
    P_RULES,
    P_SCREEN,
    QUEUE_FULL,
    REJECTED,
    S_ANSWERED,
    S_ARRIVAL_QUEUED,
    S_HEAP,
    S_NEXT,
    S_NFREE,
    S_NOFFERS,
    S_NREC,
    S_NRUNNING,
    S_NTL,
    S_NWAIT,
    S_OFFER_AT,
    S_PENDING,
    S_PHASE,
    S_SEQ,
    S_STOP,
    S_VERSION,
    TOLERANCE,
)
from .jit import kernel
from .options import build_table, decide, free_total, meets
from .order import stable_sort


@kernel
def _less(ht, hk, hs, i, j):
    if ht[i] != ht[j]:
        return ht[i] < ht[j]
    if hk[i] != hk[j]:
        return hk[i] < hk[j]
    return hs[i] < hs[j]


@kernel
def _swap(ht, hk, hs, hp, i, j):
    ht[i], ht[j] = ht[j], ht[i]
    hk[i], hk[j] = hk[j], hk[i]
    hs[i], hs[j] = hs[j], hs[i]
    hp[i], hp[j] = hp[j], hp[i]


@kernel
def push(ist, ht, hk, hs, hp, time, kind, payload):
    """heapq.heappush of ``(time, kind, seq, payload)``, seq the next of ``ist[S_SEQ]``."""
    i = ist[S_HEAP]
    ht[i], hk[i], hs[i], hp[i] = time, kind, ist[S_SEQ], payload
    ist[S_HEAP] += 1
    ist[S_SEQ] += 1
    while i > 0:
        parent = (i - 1) // 2
        if not _less(ht, hk, hs, i, parent):
            break
        _swap(ht, hk, hs, hp, i, parent)
        i = parent


@kernel
def pop(ist, ht, hk, hs, hp):
    """heapq.heappop: the index 0 entry moved to the end of the live heap; returns that index."""
    last = ist[S_HEAP] - 1
    _swap(ht, hk, hs, hp, 0, last)
    ist[S_HEAP] = last
    i = 0
    while True:
        left, right, smallest = 2 * i + 1, 2 * i + 2, i
        if left < last and _less(ht, hk, hs, left, smallest):
            smallest = left
        if right < last and _less(ht, hk, hs, right, smallest):
            smallest = right
        if smallest == i:
            break
        _swap(ht, hk, hs, hp, i, smallest)
        i = smallest
    return last


# -- the event loop (placer.sim.simulator.Simulator, without snapshots or resizes) ---------------------------------
@kernel
def run(ist, fst, pi, pf, c, w):
    """Run the stream to its end, to a decision that wants prices or to one the caller makes: :data:`DONE`, :data:`NEED`,
    :data:`GROW`, :data:`ASK` (answer it with :func:`~placer.sim.engine.options.external_answer`'s inputs) or
    :data:`LOGGED` (a screening program's log is full: read it, zero ``c.n_log``, call again)."""
    if ist[S_PHASE] == 0:
        _push_next_arrival(ist, c)
        ist[S_PHASE] = 1
    while True:
        if ist[S_PENDING] < 0:
            _advance(ist, fst, c, w)
            if ist[S_PENDING] < 0:
                while ist[S_HEAP] > 0:  # Simulator.run(): the remaining completions
                    _step(ist, fst, c, w)
                ist[S_PHASE] = 2
                return DONE
        j = ist[S_PENDING]
        if pi[P_KIND] == EXTERNAL:
            if ist[S_ANSWERED] == 0:
                if pi[P_SCREEN] == 0:
                    return ASK
                found = screen(j, pi, ist, fst, c, w)
                if found > 0:
                    return ASK
                if found < -1:
                    return NEED if found == -2 else GROW if found == -3 else LOGGED
                choice = -1  # nothing feasible: rejected (held in a queue) without asking
            else:
                choice = external_answer(j, ist, c, w)
        else:
            choice = decide(j, pi, pf, ist, _remaining(c, j, fst[F_NOW]), c, w, c.seen, c.sizes)
        if choice == -2:
            return NEED
        if choice == -3:
            return GROW
        ist[S_PENDING], ist[S_ANSWERED] = -1, 0
        if choice == -5:
            _leave(j, NO_CAPACITY, ist, fst, c, w, 0)
        else:
            _apply(j, choice, ist, fst, c, w)
        if ist[S_STOP]:
            return APPLIED


@kernel
def screen(j, pi, ist, fst, c, w):
    """Whether job ``j`` has a feasible option at degrees 1..``pi[P_SCREEN]`` x the program's rules (the reference's
    :func:`~placer.sim.options.any_feasible`): 1 if so; 0 if not, logged in ``c.log`` (the job, the jobs waiting and
    the devices free); -2 / -3 when prices or shape room are wanted, -4 when the log is full."""
    limit = min(pi[P_SCREEN], free_total(ist))
    n = build_table(c.graph[j], limit, pi[P_RULES:], pi[P_NRULES], c.iters[j], ist, c.free, c.server_of, c.dev_rate,
                    c.dev_kind, c.dev_mem, c.n_mem[0], c.slots, c.shape_keys, c.rep_dev, c.rep_deg, c.price, c.fits, c.need_g, c.need_s,
                    w)
    if n < 0:
        return -2 if n == -1 else -3
    deadline = _remaining(c, j, fst[F_NOW])
    for i in range(n):
        if meets(w.jct[i], deadline):
            return 1
    at = c.n_log[0]
    if at >= c.log.shape[0]:
        return -4
    c.log[at, 0], c.log[at, 1], c.log[at, 2] = j, ist[S_NWAIT], ist[S_NFREE]
    c.n_log[0] = at + 1
    return 0


@kernel
def _deadline(c, j):
    return c.beta[j] * c.seq_jct[j]  # Job.deadline_s


@kernel
def _remaining(c, j, now):
    return _deadline(c, j) - (now - c.arrival[j])  # Job.remaining_s


@kernel
def _apply(j, choice, ist, fst, c, w):
    """Simulator.decide: hold or block a rejected job, start or block a placed one."""
    if choice < 0:
        if c.qi[0] > 0:
            if c.qi[2] == 0:  # head of line: a held job stops the round
                ist[S_NOFFERS] = ist[S_OFFER_AT] = 0
            return
        _leave(j, REJECTED, ist, fst, c, w, -1)
        return
    sid = w.shape[choice]
    if not c.fits[c.graph[j], sid]:
        _leave(j, OUT_OF_MEMORY, ist, fst, c, w, choice)
        return
    jct = c.price[c.graph[j], sid] * c.iters[j]
    if not (jct <= _remaining(c, j, fst[F_NOW]) * (1 + TOLERANCE)):
        _leave(j, DEADLINE, ist, fst, c, w, choice)
        return
    _start(j, choice, jct, sid, ist, fst, c, w)


@kernel
def _record(j, outcome, reason, ist, fst, c, w, choice):
    k = ist[S_NREC]
    ist[S_NREC] += 1
    c.rec_job[k], c.rec_outcome[k], c.rec_reason[k] = j, outcome, reason
    c.rec_wait[k] = fst[F_NOW] - c.arrival[j]
    degree = 0
    if choice >= 0:
        degree = w.deg[choice]
        for i in range(degree):
            c.rec_dev[k, i] = w.ids[w.pos[choice, i]]
    c.rec_deg[k] = degree
    return k


@kernel
def _leave(j, reason, ist, fst, c, w, choice):
    _unwait(j, ist, c)
    k = _record(j, BLOCKED, reason, ist, fst, c, w, choice)
    c.rec_shape[k] = -1


@kernel
def _start(j, choice, jct, sid, ist, fst, c, w):
    now = fst[F_NOW]
    finish = now + jct
    degree = w.deg[choice]
    for i in range(degree):
        d = w.ids[w.pos[choice, i]]
        c.free[d] = False
        c.free_at[d] = finish
        c.run_dev[j, i] = d
    c.run_deg[j] = degree
    ist[S_NFREE] -= degree
    ist[S_VERSION] += 1
    ist[S_NRUNNING] += 1
    _unwait(j, ist, c)
    push(ist, c.ht, c.hk, c.hs, c.hp, finish, COMPLETION, j)
    _mark_busy(ist, fst, c)
    k = _record(j, ACCEPTED, -1, ist, fst, c, w, choice)
    c.rec_jct[k], c.rec_finish[k], c.rec_shape[k] = jct, finish, sid


@kernel
def _unwait(j, ist, c):
    if not c.in_wait[j]:
        return
    c.in_wait[j] = False
    n = ist[S_NWAIT]
    at = 0
    while c.wait_ids[at] != j:
        at += 1
    for i in range(at, n - 1):
        c.wait_ids[i] = c.wait_ids[i + 1]
    ist[S_NWAIT] = n - 1


@kernel
def _wait(j, ist, c):
    c.wait_ids[ist[S_NWAIT]] = j  # arrivals come in id order: the list stays ascending
    ist[S_NWAIT] += 1
    c.in_wait[j] = True


@kernel
def _mark_busy(ist, fst, c):
    busy, now, n = free_total(ist) - ist[S_NFREE], fst[F_NOW], ist[S_NTL]
    if c.tl_time[n - 1] == now:
        c.tl_busy[n - 1] = busy
    else:
        c.tl_time[n], c.tl_busy[n] = now, busy
        ist[S_NTL] = n + 1


@kernel
def _push_next_arrival(ist, c):
    i = ist[S_NEXT]
    ist[S_ARRIVAL_QUEUED] = i < c.arrival.shape[0]
    if i < c.arrival.shape[0]:
        push(ist, c.ht, c.hk, c.hs, c.hp, c.arrival[i], ARRIVAL, i)
        ist[S_NEXT] = i + 1


@kernel
def _step(ist, fst, c, w):
    at = pop(ist, c.ht, c.hk, c.hs, c.hp)
    fst[F_NOW] = c.ht[at]
    kind, j = c.hk[at], c.hp[at]
    if kind == COMPLETION:
        degree = c.run_deg[j]
        for i in range(degree):
            c.free[c.run_dev[j, i]] = True
            c.free_at[c.run_dev[j, i]] = fst[F_NOW]
        ist[S_NFREE] += degree
        ist[S_VERSION] += 1
        ist[S_NRUNNING] -= 1
        _mark_busy(ist, fst, c)
    elif kind == ARRIVAL:
        _arrive(j, ist, fst, c, w)
    elif c.in_wait[j]:  # EXPIRY of a job still waiting
        _leave(j, EXPIRED, ist, fst, c, w, -1)


@kernel
def _arrive(j, ist, fst, c, w):
    _push_next_arrival(ist, c)
    fastest, deadline = c.fastest[j], _deadline(c, j)
    if c.qi[0] == 0:
        _wait(j, ist, c)
    elif np.isinf(fastest):
        _leave(j, OUT_OF_MEMORY, ist, fst, c, w, -1)
    elif not (c.arrival[j] + deadline - fastest >= c.arrival[j] - 1e-9 * max(1.0, deadline)):  # servable
        _leave(j, DEADLINE, ist, fst, c, w, -1)
    else:
        _wait(j, ist, c)
        push(ist, c.ht, c.hk, c.hs, c.hp, c.arrival[j] + deadline - fastest + 1e-9 * max(1.0, deadline), EXPIRY, j)


@kernel
def _advance(ist, fst, c, w):
    """Simulator._advance: events to the next offered job, or to the end of the decisions."""
    while ist[S_PENDING] < 0:
        if ist[S_OFFER_AT] < ist[S_NOFFERS]:
            _offer_next(ist, c)
            continue
        _close_decision_point(ist, fst, c, w)
        if not (ist[S_HEAP] > 0 and (ist[S_ARRIVAL_QUEUED] or ist[S_NWAIT] > 0)):
            break
        _step(ist, fst, c, w)
        while ist[S_HEAP] > 0 and c.ht[0] <= fst[F_NOW]:
            _step(ist, fst, c, w)
        _open_decision_point(ist, c)


@kernel
def _offer_next(ist, c):
    j = c.offers[ist[S_OFFER_AT]]
    ist[S_OFFER_AT] += 1
    queued, none_free = c.qi[0] > 0, ist[S_NFREE] == 0
    if not c.in_wait[j] or (queued and none_free):
        if queued and none_free:
            ist[S_NOFFERS] = ist[S_OFFER_AT] = 0
        return
    ist[S_PENDING] = j


@kernel
def _open_decision_point(ist, c):
    n = ist[S_NWAIT]
    if n == 0 or (c.qi[0] > 0 and ist[S_NFREE] == 0):
        return
    for i in range(n):
        c.offers[i] = c.wait_ids[i]
    if c.qi[0] > 0 and c.qi[1] != 0:  # QueueConfig.order: edf, sjf (stable over arrival order); fifo as it is
        for i in range(n):
            j = c.wait_ids[i]
            c.order_key[i] = c.arrival[j] + _deadline(c, j) if c.qi[1] == 1 else c.seq_jct[j]
        stable_sort(c.offers, c.order_key, n, c.sort_ids, c.sort_keys)
    ist[S_NOFFERS], ist[S_OFFER_AT] = n, 0


@kernel
def _close_decision_point(ist, fst, c, w):
    """The loss system blocks every job still waiting; a queue over capacity blocks its newest."""
    if c.qi[0] == 0:
        while ist[S_NWAIT] > 0:
            _leave(c.wait_ids[0], REJECTED, ist, fst, c, w, -1)
        return
    while ist[S_NWAIT] > c.qi[0]:
        _leave(c.wait_ids[ist[S_NWAIT] - 1], QUEUE_FULL, ist, fst, c, w, -1)
