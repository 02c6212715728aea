"""The advisers' answers in compiled code: heuristics run beside a policy that decides in Python (the learning
environment's advisers, a learned policy's), each answering every offer of the stream by its :class:`Program` on the
engine's option tables, with a record of its own of the jobs it was offered (lean's admission), as its ``decide`` would
on the same view (the differential tests hold the two equal).

A view the engine gives (:meth:`~placer.sim.engine.stream.Stream.view`) carries an :class:`EngineAdvice` (its
``engine``), which answers for the programs while that view is the stream's current state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject

from . import codes as k
from .codes import LEAN, P_KIND, Q_ADMIT, S_NFREE, S_NSIZES, S_NWAIT, SWITCH
from .entry import compiled
from .jit import kernel
from .options import decide, quiet, record
from .program import Program
from .work import work_arrays

if TYPE_CHECKING:
    from .stream import Stream


@kernel
def advise_all(j, deadline, pis, pfs, ist, c, works, seen, sizes, nsizes, done, out_deg, out_dev):
    """Each adviser's answer to job ``j`` (``deadline`` s left) not ``done`` yet: ``out_deg[a]`` devices (0: reject or
    hold) at ``out_dev[a]``. Returns 0, or -2 / -3 when prices or shape room are wanted first (call again: the advisers
    answered are ``done``, and asking one again gives the same answer)."""
    saved = ist[S_NSIZES]
    status = 0
    for a in range(pis.shape[0]):
        if done[a]:
            continue
        w = works[a]
        ist[S_NSIZES] = nsizes[a]
        choice = decide(j, pis[a], pfs[a], ist, deadline, c, w, seen[a], sizes[a])
        nsizes[a] = ist[S_NSIZES]
        if choice == -2 or choice == -3:
            status = choice
            break
        done[a] = True
        out_deg[a] = 0
        if choice >= 0:
            out_deg[a] = w.deg[choice]
            for i in range(w.deg[choice]):
                out_dev[a, i] = w.ids[w.pos[choice, i]]
    ist[S_NSIZES] = saved
    return status


@kernel
def observe_all(j, pis, pfs, ist, c, seen, sizes, nsizes):
    """What each adviser's :func:`advise_all` answer to job ``j`` would change in its record, without the answer (an
    offer with nothing feasible, whose answers nobody reads): lean's admission, and switch's when the cluster is busy,
    record the job's size."""
    for a in range(pis.shape[0]):
        kind, admits = pis[a, P_KIND], pfs[a, Q_ADMIT] >= 0
        if admits and (kind == LEAN or (kind == SWITCH and not quiet(pfs[a], ist))):
            saved = ist[S_NSIZES]
            ist[S_NSIZES] = nsizes[a]
            record(j, ist, c.seq_jct, seen[a], sizes[a])
            nsizes[a] = ist[S_NSIZES]
            ist[S_NSIZES] = saved


@kernel
def observe_logged(log, pis, pfs, ist, c, seen, sizes, nsizes):
    """:func:`observe_all` of each offer of ``log`` (rows of :meth:`~placer.sim.engine.stream.Stream.screened`), in
    order, each with the jobs waiting and the devices free it was offered at."""
    waiting, free = ist[S_NWAIT], ist[S_NFREE]
    for r in range(log.shape[0]):
        ist[S_NWAIT], ist[S_NFREE] = log[r, 1], log[r, 2]
        observe_all(log[r, 0], pis, pfs, ist, c, seen, sizes, nsizes)
    ist[S_NWAIT], ist[S_NFREE] = waiting, free


class CompiledAdvisers:
    """``programs`` answering every offer of ``stream``: their work arrays and run records, kept with the stream."""

    def __init__(self, stream: Stream, programs: Sequence[Program]) -> None:
        n, devices = len(stream.specs), stream.cost.cluster.num_devices
        self.stream = stream
        arrays = [p.arrays() for p in programs]
        self.pis = np.stack([pi for pi, _ in arrays])
        self.pfs = np.stack([pf for _, pf in arrays])
        self.works = tuple(work_arrays(devices, stream.width, len(p.rules)) for p in programs)
        self.seen = np.zeros((len(programs), n), dtype=np.bool_)
        self.sizes = np.zeros((len(programs), n))
        self.nsizes = np.zeros(len(programs), dtype=np.int64)
        self.out_dev = np.zeros((len(programs), max(stream.width, 1)), dtype=np.int64)
        self._entry: Callable[..., int] | None = None
        self._observe: Callable[..., int] | None = None
        self._replay: Callable[..., int] | None = None

    def answer(self, job: Job, remaining_s: float) -> list[Decision]:
        """Each program's decision on ``job`` with ``remaining_s`` left, in order."""
        stream, book, ist = self.stream, self.stream.book, self.stream.ist
        done, out_deg = np.zeros(len(self.works), dtype=np.bool_), np.zeros(len(self.works), dtype=np.int64)
        while True:
            c = stream.synced()
            args = (job.job_id, remaining_s, self.pis, self.pfs, ist, c, self.works, self.seen, self.sizes, self.nsizes, done,
                    out_deg, self.out_dev)  # fmt: skip
            self._entry = self._entry or compiled(advise_all, args)
            status = self._entry(*args)
            stream.settled()
            if status == -2:
                book.fill(c.need_g[: ist[k.S_NNEED]], c.need_s[: ist[k.S_NNEED]])
            elif status == -3:
                book.grow()
            else:
                break
        rows = self.out_dev.tolist()
        return [Place(tuple(rows[a][:d])) if d > 0 else Reject() for a, d in enumerate(out_deg.tolist())]

    def observe(self, job: Job) -> None:
        """Record ``job``'s offer as :meth:`answer` would, without answering."""
        args = (job.job_id, self.pis, self.pfs, self.stream.ist, self.stream.c, self.seen, self.sizes, self.nsizes)
        self._observe = self._observe or compiled(observe_all, args)
        self._observe(*args)

    def observe_logged(self, log: np.ndarray) -> None:
        """Record each offer of ``log`` (a screening program's, :meth:`~placer.sim.engine.stream.Stream.screened`) as
        :meth:`observe` would have when it was made."""
        args = (log, self.pis, self.pfs, self.stream.ist, self.stream.c, self.seen, self.sizes, self.nsizes)
        self._replay = self._replay or compiled(observe_logged, args)
        self._replay(*args)


class EngineAdvice:
    """The programs' answers to offers on one of ``stream``'s views (``free``: the device state that view shows), while
    the stream is still in that state."""

    def __init__(self, stream: Stream, free: np.ndarray) -> None:
        self._stream, self._free = stream, free
        self._version, self._now = int(stream.ist[k.S_VERSION]), stream.now

    def advise(self, job: Job, view: ClusterView, programs: Sequence[Program]) -> list[Decision] | None:
        """Each program's decision on ``job`` at ``view`` (:class:`CompiledAdvisers`: each keeps its own record of the
        stream's offers, so put every offer of the stream to the same programs), or None where the view is another's or
        no longer the stream's state, or a program is wider than the stream's arrays."""
        if not self._usable(job, view, programs):
            return None
        return self._advisers(programs).answer(job, job.remaining_s(view.now))

    def observe(self, job: Job, view: ClusterView, programs: Sequence[Program]) -> bool:
        """Record ``job``'s offer at ``view`` with the programs as :meth:`advise` would, without their answers (an offer
        with nothing feasible); False where :meth:`advise` would give None."""
        if not self._usable(job, view, programs):
            return False
        self._advisers(programs).observe(job)
        return True

    def observe_logged(self, view: ClusterView, programs: Sequence[Program], log: np.ndarray) -> bool:
        """Record the offers the stream's screening program rejected unasked (``log``: their rows of
        :meth:`~placer.sim.engine.stream.Stream.screened`) with the programs, each as :meth:`observe` would have at its
        offer; False where ``view`` is not this one's and the stream's state."""
        if not self._current(view):
            return False
        self._advisers(programs).observe_logged(log)
        return True

    def _advisers(self, programs: Sequence[Program]) -> CompiledAdvisers:
        key = tuple(programs)
        answering = self._stream.advisers.get(key)
        if answering is None:
            answering = self._stream.advisers[key] = CompiledAdvisers(self._stream, programs)
        return answering

    def _current(self, view: ClusterView) -> bool:
        """Whether ``view`` is this one's and still the stream's state."""
        stream = self._stream
        return view.free is self._free and int(stream.ist[k.S_VERSION]) == self._version and stream.now == self._now

    def _usable(self, job: Job, view: ClusterView, programs: Sequence[Program]) -> bool:
        """Whether ``view`` is this one's and still the stream's state, ``job`` one of the stream's, and every program
        within the stream's arrays."""
        stream = self._stream
        if not self._current(view):
            return False
        if not (0 <= job.job_id < len(stream.specs) and stream.job(job.job_id) is job):
            return False
        devices = stream.cost.cluster.num_devices
        return all(min(p.max_degree, devices) <= stream.width for p in programs)
