"""The service's refit, run in a process of its own (:class:`RefitProcess`), off the serving process's GIL.

A refit is CPU-bound Python, numpy and scipy (MAP fits, cross-validation, then pricing graphs on the
chosen model): on a thread of the serving process it held the GIL for whole slices that requests
then waited for. :func:`refit` is the same work as a pure function of picklable inputs
(:class:`RefitJob`: the clusters, the rows with their graphs, the graphs to price) to picklable
outputs (:class:`RefitOutcome`: the chosen cluster, what the state shows, the prices); it runs in
one worker process (``spawn``: no fork of a threaded server), started at the first refit and kept
(its graph-side caches with it) until :meth:`RefitProcess.close`. A worker that dies (killed, out
of memory) fails that refit only: the next one starts a new worker. The worker watches the process
that started it (:func:`_start_worker`) every :data:`PARENT_POLL_S` and exits once it has died (later under CPU
load: it is niced), ``kill -9`` included: no worker is orphaned, and multiprocessing's resource tracker, which lives until every
process holding its pipe has exited, goes with it.

The rules of the fit (own terms first, shared terms on evidence and a better cross-validated error)
are :mod:`placer.serve.refit`'s, stated there.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from placer.calibration.fit import constants_needed, fit_rows
from placer.calibration.measurements import Row
from placer.calibration.result import Calibration
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.common.pool import spawn_executor
from placer.cost.model import CostModel
from placer.graphs.job_graph import JobGraph
from placer.serve.graphs import content_key
from placer.sim.fastest import fastest_iteration_s

MIN_JOBS = 5
MIN_GRAPHS = 3
MIN_TENANTS = 3  # distinct reporting tenants whose reports together may move the shared constants (else trusted ones only)
WORKER_NICE = 10  # the worker's CPU priority below the service's: requests first on a busy host
PARENT_POLL_S = 0.1  # how often the worker checks that the server that started it is alive


@dataclass(frozen=True)
class RefitJob:
    """One refit's inputs: the cluster file's constants (``base``), the shared constants in use (``held``; ``moved``:
    whether a refit moved them), the kept rows, the graphs to price on the chosen model (``warm``) and the tenants trusted
    for calibration (``trusted``; a row's ``source`` is its reporting tenant)."""

    base: Cluster
    held: Cluster
    moved: bool
    rows: list[Row]
    warm: list[JobGraph] = field(default_factory=list)
    trusted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RefitOutcome:
    """One refit's result. ``update``: fields of the calibration state (always ``needed``; with a fit ``fitted`` (the
    fit's own constants), ``median_error``, ``cv_error``, ``shared``). ``cluster``: the chosen cluster (None: too few
    rows or ``error``); ``shared``: its shared constants when this refit moved them (``shared_fitted`` their values);
    ``priced``: :meth:`CostModel.priced` of a model of ``cluster`` after pricing the rows and the warm graphs;
    ``error``: why the previous model stays (``unexpected``: not a :class:`PlacerError`); ``pid``: the process that fitted."""

    update: dict
    cluster: Cluster | None = None
    shared: Cluster | None = None
    shared_fitted: dict[str, float] = field(default_factory=dict)
    priced: tuple[tuple, list, list] | None = None
    error: str | None = None
    unexpected: bool = False
    pid: int = 0


def refit(job: RefitJob) -> RefitOutcome:
    """The refit of ``job`` (:mod:`placer.serve.refit`'s rules); never raises: a failure is the outcome's ``error``."""
    try:
        return _refit(job)
    except PlacerError as exc:
        return RefitOutcome({}, error=str(exc)[:1000], pid=os.getpid())
    except Exception as exc:  # reported to the service, which keeps serving on the model in use
        return RefitOutcome({}, error=f"{type(exc).__name__}: {exc}"[:1000], unexpected=True, pid=os.getpid())


def shared_evidence(rows: list[Row], trusted: frozenset[str]) -> tuple[list[Row], str]:
    """The rows that may move the shared constants, and what they are: every row when :data:`MIN_TENANTS` distinct tenants
    or more reported, else the trusted tenants' rows (one client's reports alone never move what every tenant's
    predictions share, unless the operator trusts it for calibration)."""
    tenants = {r.source for r in rows}
    if len(tenants) >= MIN_TENANTS:
        return rows, f"of {len(tenants)} tenants"
    mine = [r for r in rows if r.source in trusted]
    return mine, f"of trusted tenants ({len(tenants)} tenant(s) reported; {MIN_TENANTS}+ move them together)"


def _refit(job: RefitJob) -> RefitOutcome:
    rows, base = job.rows, job.base
    needed = constants_needed(base, rows, shared=False) + 1
    if len(rows) < needed:
        return RefitOutcome({"needed": needed}, pid=os.getpid())
    chosen = fit_rows(job.held, rows, source="reported step times", shared=False)
    evident, whose = shared_evidence(rows, job.trusted)
    jobs = {(content_key(r.graph), r.devices) for r in evident}  # by content: one graph placed by several tenants is one
    graphs = {content_key(r.graph) for r in evident}
    shared = f"held: reports {whose}: {len(jobs)} job(s) of {len(graphs)} graph(s); they move on {MIN_JOBS}+ jobs of {MIN_GRAPHS}+ graphs"
    moved: Calibration | None = None
    if len(jobs) >= MIN_JOBS and len(graphs) >= MIN_GRAPHS and len(evident) >= constants_needed(base, evident) + 1:
        both = fit_rows(base, evident, source="reported step times")
        held = chosen if len(evident) == len(rows) else fit_rows(job.held, evident, source="reported step times", shared=False)
        if _cv(both) < _cv(held):
            shared = f"moved: cross-validated error {_cv(both):.1%} against {_cv(held):.1%} with them held (reports {whose})"
            moved = both
            chosen = both if len(evident) == len(rows) else fit_rows(both.cluster, rows, source="reported step times", shared=False)
        else:
            where = "the values in use" if job.moved else "the cluster file's"
            errors = f"{_cv(both):.1%} against {_cv(held):.1%}"
            shared = f"held at {where}: refitting them would not lower the cross-validated error ({errors})"
    model = CostModel(chosen.cluster)
    for r in rows:  # the reporting jobs' shapes: the next report of each is judged against a priced prediction
        model.predict(r.graph, r.devices)
    for graph in job.warm:  # as the service prices a graph (every degree on the idle cluster)
        model.sequential_jct_s(graph)
        fastest_iteration_s(model, graph)
    return RefitOutcome(
        {
            "needed": needed,
            "fitted": {path: value for path, (_, value) in chosen.fitted.items()},
            "median_error": float(np.median(np.abs(chosen.errors))),
            "cv_error": _cv(chosen),
            "shared": shared,
        },
        cluster=chosen.cluster,
        shared=None if moved is None else moved.cluster,
        shared_fitted={} if moved is None else {p: v for p, (_, v) in moved.fitted.items() if not p.startswith("jobs.")},
        priced=model.priced(),
        pid=os.getpid(),
    )


def _cv(calibration: Calibration) -> float:
    return float(np.median(np.abs(calibration.cv_errors)))


def _start_worker(parent_pid: int) -> None:
    """The worker's initializer: a lower CPU priority, and a daemon thread that ends the worker (``os._exit``) once its
    parent is no longer ``parent_pid`` (the server died, however: a worker's pipes never close while it holds them)."""
    os.nice(WORKER_NICE)
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), name="placer-refit-parent", daemon=True).start()


def _exit_with_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


class RefitProcess:
    """One worker process that runs :func:`refit`, started at the first :meth:`run`; thread-safe."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def run(self, job: RefitJob) -> RefitOutcome:
        """:func:`refit` of ``job`` in the worker; a worker that died or cannot start is the outcome's (unexpected) error,
        and the next run starts a new one."""
        with self._lock:
            if self._closed:
                return RefitOutcome({}, error="the service is stopping", pid=os.getpid())
            if self._pool is None:
                self._pool = spawn_executor(1, initializer=_start_worker, initargs=(os.getpid(),))
            pool = self._pool
        try:
            return pool.submit(refit, job).result()
        except Exception as exc:  # BrokenProcessPool (the worker died), or it could not start
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return RefitOutcome({}, error=f"refit process failed: {type(exc).__name__}: {exc}"[:1000], unexpected=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
