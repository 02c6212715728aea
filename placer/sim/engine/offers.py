"""Option tables of an offer, built by the compiled engine: what a caller that decides in Python (the learning
environment, a learned policy) reads at an offer, without the cost model's Python table.

:class:`EngineOptions` is an :class:`~placer.sim.options.OptionTable` (the same options, arrays and order; the
differential tests hold the two equal at every offer of generated streams) built from the engine's table on the
stream's free devices and its price book. A view the engine gives (:meth:`~placer.sim.engine.stream.Stream.view`)
carries an :class:`OfferTables`, which builds them while that view is the stream's current state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from placer.cluster.placement import PLACEMENT_RULES
from placer.sim.state import ClusterView
from placer.sim.types import DEADLINE_TOLERANCE, Decision, Job

from . import codes as k
from .advisers import CompiledAdvisers
from .entry import compiled
from .options import _table
from .program import Program
from .table import EngineOptions
from .work import Work, work_arrays

if TYPE_CHECKING:
    from .stream import Stream

_RULE_CODES = {rule: i for i, rule in enumerate(PLACEMENT_RULES)}  # first_fit, best_fit, spread: the engine's codes


@njit(cache=True)
def offer_table(j, limit, rules, n_rules, ist, c, w, per_server, spanned, breaks, counts):
    """Job ``j``'s option table at degrees 1..``limit`` x ``rules[:n_rules]`` into ``w`` (as a program builds it), and per
    option the servers it spans and the wholly free servers it takes devices from (``spanned``, ``breaks``; 0 without
    devices); ``counts``: (free devices, wholly free servers). Returns the number of options, or -2 / -3 when prices or
    shape room are wanted (``per_server``: each server's number of devices)."""
    n = _table(j, limit, rules, n_rules, ist, c, w)
    if n < 0:
        return n
    n_free = 0
    for d in range(c.free.shape[0]):
        n_free += c.free[d]
    n_runs = w.place[n_free - 1] + 1 if n_free > 0 else 0
    whole = 0
    for r in range(n_runs):
        whole += w.run_count[r] == per_server[c.server_of[w.ids[w.run_start[r]]]]
    counts[0], counts[1] = n_free, whole
    for i in range(n):
        spanned[i], breaks[i] = 0, 0
        if not w.valid[i]:
            continue
        last = -1
        for p in range(w.deg[i]):
            run = w.place[w.pos[i, p]]
            if run != last:
                last = run
                spanned[i] += 1
                breaks[i] += w.run_count[run] == per_server[c.server_of[w.ids[w.run_start[run]]]]
    return n


class OfferTables:
    """The option tables of offers on one of ``stream``'s views (``free``: the device state that view shows): built by
    the engine while the stream is still in that state, None once it has moved on (the caller builds its own)."""

    def __init__(self, stream: Stream, free: np.ndarray) -> None:
        self._stream, self._free = stream, free
        self._version, self._now = int(stream.ist[k.S_VERSION]), stream.now
        self._built: dict[tuple, EngineOptions] = {}  # per (job, degrees, rules, padding): a view's offers ask again

    def options(
        self, job: Job, view: ClusterView, max_degree: int, rules: Sequence[str], pad_to: int | None = None
    ) -> EngineOptions | None:
        """``job``'s options on ``view`` (the view this was given with) at degrees 1..min(``max_degree``, devices) x
        ``rules``, padded with options without devices up to ``pad_to`` (default ``max_degree``); None where the engine
        cannot build them: the view is another's or no longer the stream's state, a rule the engine lacks, a job of another
        stream or degrees wider than the stream's arrays."""
        stream = self._stream
        if not self._current(job, view) or not 0 < len(rules) <= 3 or any(r not in _RULE_CODES for r in rules):
            return None
        limit = min(max_degree, stream.cost.cluster.num_devices)
        if limit > stream.width or limit < 1:
            return None
        key = (job.job_id, limit, tuple(rules), max_degree if pad_to is None else pad_to)
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = _engine_options(stream, job, view, limit, tuple(rules), key[3])
        return built

    def any_feasible(self, job: Job, view: ClusterView, max_degree: int, rules: Sequence[str]) -> bool | None:
        """Whether some option of :meth:`options` is feasible, without copying the table out (most offers of a queue have
        none); None where :meth:`options` would be."""
        stream = self._stream
        if not self._current(job, view) or not 0 < len(rules) <= 3 or any(r not in _RULE_CODES for r in rules):
            return None
        limit = min(max_degree, stream.cost.cluster.num_devices)
        if limit > stream.width or limit < 1:
            return None
        built = self._built.get((job.job_id, limit, tuple(rules), max_degree))
        if built is not None:
            return bool(built.feasible.any())
        w, n, *_ = _table_in(stream, job, limit, tuple(rules))
        jct = w.jct[:n]  # inf where the job does not fit
        return bool(np.any(np.isfinite(jct) & (jct <= job.remaining_s(view.now) * (1 + DEADLINE_TOLERANCE))))

    def advise(self, job: Job, view: ClusterView, programs: Sequence[Program]) -> list[Decision] | None:
        """Each program's decision on ``job`` at ``view`` (:class:`~placer.sim.engine.advisers.CompiledAdvisers`: each
        keeps its own record of the stream's offers, so put every offer of the stream to the same programs), or None
        where the view is another's or no longer the stream's state."""
        devices = self._stream.cost.cluster.num_devices
        if not self._current(job, view) or any(min(p.max_degree, devices) > self._stream.width for p in programs):
            return None
        return self._advisers(programs).answer(job, job.remaining_s(view.now))

    def observe(self, job: Job, view: ClusterView, programs: Sequence[Program]) -> bool:
        """Record ``job``'s offer at ``view`` with the programs as :meth:`advise` would, without their answers (an offer
        with nothing feasible); False where the view is another's or no longer the stream's state."""
        if not self._current(job, view):
            return False
        self._advisers(programs).observe(job)
        return True

    def _advisers(self, programs: Sequence[Program]) -> CompiledAdvisers:
        key = tuple(programs)
        answering = self._stream.advisers.get(key)
        if answering is None:
            answering = self._stream.advisers[key] = CompiledAdvisers(self._stream, programs)
        return answering

    def _current(self, job: Job, view: ClusterView) -> bool:
        """Whether ``view`` is this one's, still the stream's state, and ``job`` one of the stream's."""
        stream = self._stream
        if view.free is not self._free or int(stream.ist[k.S_VERSION]) != self._version or stream.now != self._now:
            return False
        return 0 <= job.job_id < len(stream.specs) and stream.job(job.job_id) is job


def _engine_options(stream: Stream, job: Job, view: ClusterView, limit: int, rules: tuple[str, ...], pad_to: int) -> EngineOptions:
    """Build ``job``'s table in the stream's offer work arrays, with its arrays copied out."""
    w, n, spanned, breaks, counts = _table_in(stream, job, limit, rules)
    return EngineOptions(job, view, rules, pad_to, _arrays(stream, job, w, n, spanned, breaks, counts))


def _table_in(stream: Stream, job: Job, limit: int, rules: tuple[str, ...]) -> tuple[Work, int, np.ndarray, np.ndarray, np.ndarray]:
    """Build ``job``'s table in the stream's offer work arrays (one per rule tuple), pricing new shapes on the way: the
    work arrays, the number of options, each one's servers spanned and wholly free servers taken, and the counts."""
    built = stream.offer_work.get(rules)
    if built is None:
        w = work_arrays(stream.cost.cluster.num_devices, stream.book.degree_width, len(rules))
        codes = np.array([_RULE_CODES[r] for r in rules] + [0] * (3 - len(rules)), dtype=np.int64)
        m = len(w.deg)
        built = stream.offer_work[rules] = (w, codes, np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), np.zeros(2, dtype=np.int64))
    w, codes, spanned, breaks, counts = built
    per_server = stream.per_server
    book, ist = stream.book, stream.ist
    while True:
        c = stream.synced()
        args = (job.job_id, limit, codes, len(rules), ist, c, w, per_server, spanned, breaks, counts)
        if stream.offer_entry is None:
            stream.offer_entry = compiled(offer_table, args)
        n = stream.offer_entry(*args)
        stream.settled()
        if n == -2:
            book.fill(c.need_g[: ist[k.S_NNEED]], c.need_s[: ist[k.S_NNEED]])
        elif n == -3:
            book.grow()
        else:
            return w, n, spanned, breaks, counts


def _arrays(stream: Stream, job: Job, w: Work, n: int, spanned: np.ndarray, breaks: np.ndarray, counts: np.ndarray) -> dict:
    """The table's arrays, copied (the work arrays are the next table's)."""
    return {
        "degree": w.deg[:n].copy(), "valid": w.valid[:n].copy(), "repeat": w.repeat[:n].copy(),
        "jct": np.where(w.fits[:n], w.jct[:n], np.inf), "spanned": spanned[:n].copy(), "breaks": breaks[:n].copy(),
        "ids": w.ids[: counts[0]].copy(), "positions": w.pos[:n].copy(), "shape": w.shape[:n].copy(),
        "graph_row": int(stream.c.graph[job.job_id]), "strategies": stream.book.strategies,
        "ranks": stream.book.ranks[int(stream.c.graph[job.job_id]), w.shape[:n]],
        "num_free": int(counts[0]), "whole": int(counts[1]),
    }  # fmt: skip
