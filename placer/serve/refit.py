"""Online calibration for the service: keep the step times clients report, refit off the request path.

A report is checked before it is kept (a step time faster than the devices' datasheet peaks allow,
or more than 1.5x from an earlier report of the same job on the same placement shape, is refused
and changes nothing), then compared with the prediction of the model in use:

- more than :data:`SUSPECT_RATIO` (100x) from it, either way, it is held as suspect (shown in
  ``GET /v1/calibration``, never fitted): no honest job runs 100x off a calibrated prediction;
- more than :data:`DOUBT_RATIO` (10x) from it, it is held as suspect until a report of the same
  graph on other devices (another job), held or kept, is as far off within 2x; then both are kept;
- otherwise it is committed to the service's store, and a refit is queued on one background thread.

Judging a report costs no fit and no cold cost model: the plausibility check reuses one model's
graph-side caches, and the prediction is the model in use's, which the refit priced on every kept
report's placement shape before it was swapped in.

Requests go on with the model in use until the new one is swapped in. The background thread only
waits: the fit, and the pricing of the rows' shapes and of the recent graphs (``recent``) on the
chosen model, run in a worker process (:mod:`placer.serve.refit_worker`), so they hold no lock and
no GIL of the serving process; the new model takes the graph-side caches of the one in use and the
worker's prices (:meth:`CostModel.adopt`). Refits coalesce: reports that arrive during one lead to
one more, after a rest of twice the last refit's duration (a flood of reports keeps the worker busy
at most a third of the time; per-client rate limits are the HTTP layer's). Each refit is MAP (:mod:`placer.calibration.fit`):

1. each reported graph's own constants (``jobs.KEY.compute_scale``, ``iteration_s``, KEY the graph's
   content key: a graph is known by its content, never by the name a client gives it) absorb its
   reports, the cluster's shared constants (links, overheads, device rates) held: one graph's
   outliers change that graph's predictions only;
2. the shared constants are refitted too (from the cluster file's, MAP, within physical bounds)
   only on evidence from several jobs *and* graphs (:data:`~placer.serve.refit_worker.MIN_JOBS` placements of
   :data:`~placer.serve.refit_worker.MIN_GRAPHS` graphs or more) reported by
   :data:`~placer.serve.refit_worker.MIN_TENANTS` distinct tenants or more, else by tenants trusted for
   calibration alone (the others' reports then move their own graphs' constants only), and that fit is used only if its
   cross-validated error (each placement shape left out) beats the fit of step 1, which holds the shared constants in use.
   That shared fit is :func:`placer.calibration.fit.fit_rows`'s, form selection included: on a cluster file without
   opt-in keys and reports that span servers, the opted-in communication form (:mod:`placer.calibration.forms`) is
   fitted too and kept where it cross-validates clearly better; the shared constants then carry its keys.

The reports kept (and the state file's) hold their graphs within half the service's graph memory
(:data:`REPORTED_SHARE` of :class:`~placer.serve.graphs.GraphPool`'s budget, one copy per content key, held
there): past it the reports of the graphs reported least recently are dropped, in memory and in the file;
a graph larger than that alone is refused (413) and nothing is kept. So a restart reads and fits at
most that much (the reports of graphs beyond it, in a file of an earlier version, are dropped at start,
oldest first, with one log line).

A fit needs a row more than it has constants (:func:`placer.calibration.fit.constants_needed`);
until then, and when a fit fails, the model in use stays. At start the kept rows are read back and
fitted once (suspects are not kept across restarts). A refit that fails (a fit's error, a worker
that died) keeps the model in use and says why in the state's ``last_error``; the service goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import UTC, datetime

from placer.calibration.fit import check_plausible
from placer.calibration.measurements import Row
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.cost.model import CostModel
from placer.graphs.job_graph import JobGraph, job_graph_from_json
from placer.serve.errors import GraphMemoryFullError, ReservationStateError, StateUnavailableError
from placer.serve.graphs import MIB, GraphPool, TenantGraph, graph_bytes, graph_owner
from placer.serve.refit_worker import RefitJob, RefitOutcome, RefitProcess
from placer.serve.reservations import MAX_MEASUREMENTS, ReservationStore, StoredMeasurement
from placer.serve.schemas import CalibrationState, SuspectReport
from placer.serve.tenants import DEFAULT_TENANT, Tenant

log = logging.getLogger("placer.serve")

SUSPECT_RATIO = 100.0
DOUBT_RATIO = 10.0
AGREE_RATIO = 2.0
MAX_SUSPECTS = 100
REST_FACTOR = 2.0
MAX_REST_S = 60.0
REPORTED_SHARE = 0.5  # of the graph memory: for the graphs of kept reports
REPORTED = "reported step times"  # the holder of kept reports' graphs in the GraphPool


class Refitter:
    """Reported step times and the cost-model constants fitted to them.

    ``use(cluster, priced)`` swaps in a model of each fitted cluster, adopting ``priced`` (:meth:`CostModel.priced`
    of the worker's model), and returns it: reports are judged against it. ``recent()``: the graphs to price on a
    refitted model before it is used; ``model``: the model in use at start (default: a new one of ``cluster``);
    ``trusted``: the tenants trusted for calibration (default: a single-tenant server's one tenant); ``graphs``: the
    service's graphs, where the kept reports' graphs are held (default: a pool of its own, unbounded); ``tenants``: the
    names of the server's tenants (a stored graph's key is its owner's: :class:`~placer.serve.graphs.TenantGraph`).
    """

    def __init__(
        self,
        cluster: Cluster,
        store: ReservationStore,
        use: Callable[[Cluster, tuple[tuple, list, list]], CostModel],
        recent: Callable[[], Sequence[JobGraph]] = list,
        model: CostModel | None = None,
        trusted: frozenset[str] = frozenset({DEFAULT_TENANT.name}),
        graphs: GraphPool | None = None,
        tenants: frozenset[str] = frozenset(),
    ) -> None:
        self.base, self.store, self.use, self.recent = cluster, store, use, recent
        self.graphs = graphs if graphs is not None else GraphPool(float("inf"), 512)  # (an empty pool is falsy: no `or`)
        self.max_bytes = self.graphs.max_bytes * REPORTED_SHARE  # estimated bytes of the kept reports' graphs
        self.trusted = trusted  # tenants whose reports alone may move the shared constants
        self.tenants = tenants  # every tenant's name: whose a stored graph is, at start (its key is the owner's)
        self.rows: list[Row] = []
        self.suspects: list[tuple[Row, float, float]] = []  # (row, predicted, ratio), oldest first
        self.model = model or CostModel(cluster)  # the model in use (reports are judged against it)
        self.fitted_in: int | None = None  # the process id of the last refit's fit (a worker's, never this process's)
        self.shared_base = cluster  # the shared constants in use (held by a refit of jobs' own constants)
        self.shared_fitted: dict[str, float] = {}  # and their fitted values, once a refit moved them
        self.state = CalibrationState(
            measurements=0, needed=None, fitted={}, median_error=None, refits=0, refit_at=None, pending=False, last_error=None
        )
        self._lock = threading.Lock()  # guards rows, suspects, model and state
        self._dirty = False
        self._last_refit_s, self._last_refit_end = 0.0, 0.0
        self._predicted: dict[tuple, float] = {}  # check() -> keep(): the prediction a report is judged against
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="placer-refit")  # waits on the process
        self._process = RefitProcess()
        self._restore()

    def _restore(self) -> None:
        kept = self.store.measurements()
        graphs = self._restore_graphs(kept)
        for m in kept:
            if m.graph_key in graphs:
                self.rows.append(self._row(graphs[m.graph_key], m.devices, m.step_time_s, m.tenant or DEFAULT_TENANT.name))
        for key in graphs:  # checked again as a report is: the file may have been edited, or the cluster's file
            try:
                check_plausible(self.base, [r for r in self.rows if r.graph.key == key])
            except PlacerError as exc:
                raise ReservationStateError(f"reservation state {str(self.store.path)!r}: stored step times: {exc}") from None
        if self.rows:
            self.state = self.state.model_copy(update={"measurements": len(self.rows)})
            self.schedule()

    def _restore_graphs(self, kept: list[StoredMeasurement]) -> dict[str, JobGraph]:
        """The stored graphs of ``kept``, read newest report first while they fit :attr:`max_bytes`; the reports of the
        others (older) are dropped from the file, with one log line. Each document is read and parsed once."""
        reporter = {m.graph_key: m.tenant for m in kept}
        order = list(dict.fromkeys(m.graph_key for m in reversed(kept)))
        graphs: dict[str, JobGraph] = {}
        total, unowned = 0.0, []
        for i, key in enumerate(order):
            document = self.store.graph_document(key)
            if document is None:
                raise ReservationStateError(f"reservation state {str(self.store.path)!r}: measurement of graph {key!r} without its graph")
            graph = self._owned(job_graph_from_json(document, source=f"stored graph {key}"), key, reporter[key])
            if graph is None:
                unowned.append(key)
                continue
            if total + graph_bytes(graph) > self.max_bytes:
                log.warning(
                    "reservation state %s: reports of %d graph(s) dropped, oldest first: past %.0f MiB of kept reports' graphs",
                    self.store.path,
                    len(order) - i,
                    self.max_bytes / MIB,
                )
                with suppress(StateUnavailableError):  # a file that cannot be written now: dropped again at the next start
                    self.store.forget_graphs(order[i:])
                break
            total += graph_bytes(graph)
            graphs[key] = graph
            self.graphs.hold(key, REPORTED, graph)
        if unowned:  # a tenant no longer in the tenants file: no one may see or use its graphs' fits
            log.warning("reservation state %s: reports of %d graph(s) of tenants no longer known dropped", self.store.path, len(unowned))
            with suppress(StateUnavailableError):
                self.store.forget_graphs(unowned)
        return graphs

    def _owned(self, graph: JobGraph, key: str, reporter: str) -> JobGraph | None:
        """``graph`` (read back, a plain graph) as the graph stored under ``key``: itself (a content key: the single
        tenant's, or a file's of before graphs were scoped), or some tenant's :class:`TenantGraph` (its reporter's first);
        None if no tenant of this server has that key."""
        if graph.key == key:
            return graph
        for name in dict.fromkeys([reporter, *sorted(self.tenants)]):
            if name and (twin := TenantGraph.of(graph, name)).key == key:
                return twin
        return None

    def view(self, tenant: Tenant) -> CalibrationState:
        """The calibration state as ``tenant`` may see it: an admin all of it; another the shared constants and its own
        graphs' fitted constants (``jobs.KEY.*``) and suspects, never another tenant's graph keys or names (the counts and
        errors are the server's)."""
        with self._lock:
            state, suspects = self.state, list(self.suspects)
            owners = {r.graph.key: graph_owner(r.graph, DEFAULT_TENANT.name) for r in [*self.rows, *(s[0] for s in suspects)]}
        if tenant.admin:
            return state
        mine = {key for key, owner in owners.items() if owner == tenant.name}
        fitted = {p: v for p, v in state.fitted.items() if not p.startswith("jobs.") or p.split(".")[1] in mine}
        shown = [shown for shown, (row, _, _) in zip(state.suspects, suspects, strict=False) if row.graph.key in mine]
        return state.model_copy(update={"fitted": fitted, "suspects": shown})

    def _row(self, graph: JobGraph, devices: tuple[str, ...], step_time_s: float, source: str) -> Row:
        """A report as a row: its job's own constants are its graph's content key's (a name proves nothing), ``source`` the
        tenant that reported it."""
        index = self.base.device_index
        if any(d not in index for d in devices):
            raise ReservationStateError(f"reservation state {str(self.store.path)!r}: a measurement names a device this cluster lacks")
        label = f"{graph.name} on {' '.join(devices)}"
        return Row(label, graph, tuple(index[d] for d in devices), step_time_s, job=graph.key, source=source)

    def check(self, graph: JobGraph, devices: tuple[str, ...], step_time_s: float, source: str = DEFAULT_TENANT.name) -> Row:
        """The report as a row, if plausible; :class:`~placer.calibration.measurements.CalibrationError` otherwise (nothing kept).
        ``source``: the tenant reporting it."""
        if graph_bytes(graph) > self.max_bytes:
            raise GraphMemoryFullError(
                f"graph {graph.name[:64]!r} needs about {graph_bytes(graph) / MIB:.0f} MiB, more than this server keeps for"
                f" reported step times ({self.max_bytes / MIB:.0f} MiB): not kept"
            )
        row = self._row(graph, devices, step_time_s, source)
        with self._lock:
            same_job = [r for r in self.rows if r.graph.key == graph.key]
        check_plausible(self.base, [*same_job, row])
        with self._lock:
            model = self.model
        predicted = model.predict(graph, row.devices).iteration_s  # here, outside the service's lock (a first sight costs ms)
        with self._lock:
            if len(self._predicted) > MAX_SUSPECTS:
                self._predicted.clear()
            self._predicted[(graph.key, row.devices, step_time_s)] = predicted
        return row

    def keep(self, row: Row, measured_at_s: float, document: str) -> None:
        """Commit a checked row with its graph's JSON (:func:`graph_document`; the caller holds the store's lock) and queue a
        refit; or hold it as suspect (module docstring)."""
        with self._lock:
            model, predicted = self.model, self._predicted.pop((row.graph.key, row.devices, row.step_time_s), None)
        if predicted is None:
            predicted = model.predict(row.graph, row.devices).iteration_s
        ratio = row.step_time_s / predicted if predicted > 0 else float("inf")
        far = max(ratio, 1 / ratio) if ratio > 0 else float("inf")
        released = [row]
        if DOUBT_RATIO < far <= SUSPECT_RATIO and self._kept_agree(model, row, ratio):
            far = 1.0
        if far > DOUBT_RATIO:
            with self._lock:
                released = self._hold(row, predicted, ratio, far)
            if not released:
                return
        for r in released:
            names = tuple(self.base.device_name(d) for d in r.devices)
            self.store.add_measurement(StoredMeasurement(r.graph.key, names, r.step_time_s, measured_at_s, r.source), document)
        with self._lock:
            self.rows, dropped = _within(self.max_bytes, [*self.rows, *released][-MAX_MEASUREMENTS:])
            self.state = self.state.model_copy(update={"measurements": len(self.rows)})
        for r in released:
            self.graphs.hold(r.graph.key, REPORTED, r.graph)
        for key in dropped:
            self.graphs.let_go(key, REPORTED)
        if dropped:
            with suppress(StateUnavailableError):  # the reports just kept were written; these go at the next write or start
                self.store.forget_graphs(dropped)
        self.schedule()

    def _kept_agree(self, model: CostModel, row: Row, ratio: float) -> bool:
        """Whether a kept report of ``row``'s graph from another job is as far from ``model`` (within 2x)."""
        with self._lock:
            others = [r for r in self.rows if r.graph.key == row.graph.key and r.devices != row.devices][-10:]
        for other in others:
            q = other.step_time_s / model.predict(other.graph, other.devices).iteration_s
            if max(q / ratio, ratio / q) <= AGREE_RATIO:
                return True
        return False

    def _hold(self, row: Row, predicted: float, ratio: float, far: float) -> list[Row]:
        """Hold ``row`` as suspect, or release it with the suspects of other jobs of its graph that agree (lock held)."""
        if far <= SUSPECT_RATIO:
            agree = [
                (r, p, q)
                for r, p, q in self.suspects
                if r.graph.key == row.graph.key and r.devices != row.devices and max(q / ratio, ratio / q) <= AGREE_RATIO
            ]
            if agree:
                same = [(r, p, q) for r, p, q in self.suspects if r.graph.key == row.graph.key and max(q / ratio, ratio / q) <= AGREE_RATIO]
                self.suspects = [s for s in self.suspects if s not in same]
                self._show_suspects()
                return [r for r, _, _ in same] + [row]
        self.suspects = [*self.suspects, (row, predicted, ratio)][-MAX_SUSPECTS:]
        self._show_suspects()
        return []

    def _show_suspects(self) -> None:
        shown = [
            SuspectReport(
                graph=r.graph.name,
                devices=[self.base.device_name(d) for d in r.devices],
                step_time_s=r.step_time_s,
                predicted_s=p,
                ratio=q,
                why=(
                    f"more than {SUSPECT_RATIO:g}x from the prediction"
                    if max(q, 1 / q) > SUSPECT_RATIO
                    else f"more than {DOUBT_RATIO:g}x from the prediction, no other job of the graph agrees yet"
                ),
            )
            for r, p, q in self.suspects
        ]
        self.state = self.state.model_copy(update={"suspects": shown})

    def schedule(self) -> None:
        with self._lock:
            if self.state.pending:
                self._dirty = True
                return
            self.state = self.state.model_copy(update={"pending": True})
        self._worker.submit(self._refit_until_clean)

    def _refit_until_clean(self) -> None:
        """Refit until no report came in during the last one; a refit waits :data:`REST_FACTOR` times the last one's
        duration after it, so under a flood of reports the worker process is busy at most a third of the time."""
        while True:
            rest = self._last_refit_s * REST_FACTOR - (time.monotonic() - self._last_refit_end)
            if rest > 0:
                time.sleep(min(rest, MAX_REST_S))
            with self._lock:
                rows, self._dirty = list(self.rows), False
            start = time.monotonic()
            self._refit(rows)
            self._last_refit_end = time.monotonic()
            self._last_refit_s = self._last_refit_end - start
            with self._lock:
                if not self._dirty:
                    self.state = self.state.model_copy(update={"pending": False})
                    return

    def _refit(self, rows: list[Row]) -> None:
        """One refit of ``rows`` in the worker process; the chosen model swapped in, the state updated (module docstring)."""
        with self._lock:
            job = RefitJob(self.base, self.shared_base, bool(self.shared_fitted), rows, list(self.recent()), self.trusted)
        outcome = self._process.run(job)
        try:
            update = self._apply(outcome, len(rows))
        except Exception as exc:  # a refit must never take the service down; say why and keep serving
            update = {"last_error": f"{type(exc).__name__}: {exc}"[:1000]}
            log.exception("refit failed")
        with self._lock:
            self.state = self.state.model_copy(update=update)

    def _apply(self, outcome: RefitOutcome, rows: int) -> dict:
        """The state update of a refit's outcome; swaps its model in."""
        self.fitted_in = outcome.pid or self.fitted_in
        if outcome.error is not None:
            (log.error if outcome.unexpected else log.warning)("refit kept the previous model: %s", outcome.error)
            return {"last_error": outcome.error}
        if outcome.cluster is None or outcome.priced is None:
            return outcome.update
        if outcome.shared is not None:
            with self._lock:
                self.shared_base, self.shared_fitted = outcome.shared, outcome.shared_fitted
        model = self.use(outcome.cluster, outcome.priced)
        with self._lock:
            self.model = model
        shared = outcome.update["shared"]
        log.info("refitted the cost model to %d reported step times (shared constants %s)", rows, shared.split(":")[0])
        return outcome.update | {
            "fitted": self.shared_fitted | outcome.update["fitted"],
            "refits": self.state.refits + 1,
            "refit_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "last_error": None,
        }

    def wait(self, timeout_s: float = 600.0) -> None:
        """Block until no refit is queued or running (tests, shutdown); :class:`TimeoutError` after ``timeout_s`` seconds
        (a refit still running: its state is not yet the refit's, so a caller must not read it as such)."""
        done = threading.Event()
        self._worker.submit(done.set)
        if not done.wait(timeout_s):
            raise TimeoutError(f"the refit queued before this wait did not finish within {timeout_s:.0f} s")

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)
        self._process.close()


def _within(max_bytes: float, rows: list[Row]) -> tuple[list[Row], list[str]]:
    """``rows`` of the graphs reported most recently whose estimated bytes together fit ``max_bytes``, and the content
    keys of the others (the graphs reported least recently, dropped first)."""
    order = list({r.graph.key: r.graph for r in reversed(rows)}.values())
    total, kept = 0.0, set()
    for graph in order:
        total += graph_bytes(graph)
        if total > max_bytes:
            break
        kept.add(graph.key)
    return [r for r in rows if r.graph.key in kept], [g.key for g in order if g.key not in kept]
