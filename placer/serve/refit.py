"""Online calibration for the service: keep the step times clients report, refit off the request path.

A report is checked before it is kept (a step time faster than the devices' datasheet peaks allow,
or more than 1.5x from an earlier report of the same job on the same placement shape, is refused
and changes nothing), committed to the service's store, and a refit is queued on one background
thread; requests go on with the model in use until the new one is swapped in. Refits coalesce:
reports that arrive during one lead to one more. A fit needs a row more than it has constants
(:func:`placer.calibration.fit.constants_needed`); until then, and when a fit fails, the model in
use stays. At start the kept rows are read back and fitted once.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import numpy as np

from placer.calibration.fit import check_plausible, constants_needed, fit_rows
from placer.calibration.measurements import Row
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.graphs.job_graph import JobGraph, job_graph_from_json
from placer.serve.reservations import MAX_MEASUREMENTS, ReservationStore, StoredMeasurement
from placer.serve.schemas import CalibrationState

log = logging.getLogger("placer.serve")


class Refitter:
    """Reported step times and the cost-model constants fitted to them. ``use`` receives each fitted cluster."""

    def __init__(self, cluster: Cluster, store: ReservationStore, use: Callable[[Cluster], None]) -> None:
        self.base, self.store, self.use = cluster, store, use
        self.rows: list[Row] = []
        self.state = CalibrationState(
            measurements=0, needed=None, fitted={}, median_error=None, refits=0, refit_at=None, pending=False, last_error=None
        )
        self._lock = threading.Lock()  # guards rows and state
        self._dirty = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="placer-refit")
        self._restore()

    def _restore(self) -> None:
        kept, documents = self.store.measurements()
        graphs: dict[str, JobGraph] = {}
        for m in kept:
            if m.graph_key not in graphs:
                if m.graph_key not in documents:
                    raise PlacerError(f"reservation state {str(self.store.path)!r}: measurement of graph {m.graph_key!r} without its graph")
                graphs[m.graph_key] = job_graph_from_json(documents[m.graph_key], source=f"stored graph {m.graph_key}")
            self.rows.append(self._row(graphs[m.graph_key], m.devices, m.step_time_s))
        if self.rows:
            self.state = self.state.model_copy(update={"measurements": len(self.rows)})
            self.schedule()

    def _row(self, graph: JobGraph, devices: tuple[str, ...], step_time_s: float) -> Row:
        index = self.base.device_index
        if any(d not in index for d in devices):
            raise PlacerError(f"reservation state {str(self.store.path)!r}: a measurement names a device this cluster lacks")
        return Row(f"{graph.name} on {' '.join(devices)}", graph, tuple(index[d] for d in devices), step_time_s)

    def check(self, graph: JobGraph, devices: tuple[str, ...], step_time_s: float) -> Row:
        """The report as a row, if plausible; :class:`~placer.calibration.measurements.CalibrationError` otherwise (nothing kept)."""
        row = self._row(graph, devices, step_time_s)
        with self._lock:
            same_job = [r for r in self.rows if r.graph.key == graph.key]
        check_plausible(self.base, [*same_job, row])
        return row

    def keep(self, row: Row, measured_at_s: float, document: str) -> None:
        """Commit a checked row with its graph's JSON (:func:`graph_document`; the caller holds the store's lock) and queue a refit."""
        names = tuple(self.base.device_name(d) for d in row.devices)
        self.store.add_measurement(StoredMeasurement(row.graph.key, names, row.step_time_s, measured_at_s), document)
        with self._lock:
            self.rows = [*self.rows, row][-MAX_MEASUREMENTS:]
            self.state = self.state.model_copy(update={"measurements": len(self.rows)})
        self.schedule()

    def schedule(self) -> None:
        with self._lock:
            if self.state.pending:
                self._dirty = True
                return
            self.state = self.state.model_copy(update={"pending": True})
        self._worker.submit(self._refit_until_clean)

    def _refit_until_clean(self) -> None:
        while True:
            with self._lock:
                rows, self._dirty = list(self.rows), False
            self._refit(rows)
            with self._lock:
                if not self._dirty:
                    self.state = self.state.model_copy(update={"pending": False})
                    return

    def _refit(self, rows: list[Row]) -> None:
        try:
            needed = constants_needed(self.base, rows) + 1
            update: dict = {"needed": needed}
            if len(rows) >= needed:
                calibration = fit_rows(self.base, rows, source="reported step times", cross_validate=False)
                self.use(calibration.cluster)
                update |= {
                    "fitted": {path: value for path, (_, value) in calibration.fitted.items()},
                    "median_error": float(np.median(np.abs(calibration.errors))),
                    "refits": self.state.refits + 1,
                    "refit_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "last_error": None,
                }
                log.info("refitted the cost model to %d reported step times", len(rows))
        except PlacerError as exc:
            update = {"last_error": str(exc)[:1000]}
            log.warning("refit kept the previous model: %s", exc)
        except Exception as exc:  # a refit must never take the service down; say why and keep serving
            update = {"last_error": f"{type(exc).__name__}: {exc}"[:1000]}
            log.exception("refit failed")
        with self._lock:
            self.state = self.state.model_copy(update=update)

    def wait(self, timeout_s: float = 60.0) -> None:
        """Block until no refit is queued or running (tests, shutdown)."""
        done = threading.Event()
        self._worker.submit(done.set)
        done.wait(timeout_s)

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)


def graph_document(graph: JobGraph) -> str:
    """The graph as compact JSON, as the store keeps it."""
    return json.dumps(graph.to_dict(), separators=(",", ":"))
