"""``placer ray-demo`` tells the truth about its refit (issue 54, item 6), tested without Ray: it waits for the refit its
reports queued, says plainly when none landed, and the refitted prediction follows the measured step."""

from __future__ import annotations

import json

from placer.graphs.job_graph import job_graph_from_json
from placer.ray.demo import await_refit
from placer.ray.service import LocalService
from placer.serve.schemas import CalibrationState, SuspectReport
from tests.placer.serve.test_service_refit import _graph
from tests.placer.toys import toy_cluster


def test_the_demo_waits_for_the_refit_its_reports_queued_and_the_prediction_follows_the_measured_step():
    service = LocalService(toy_cluster(3, 1), "fixed:2")
    try:
        graph = job_graph_from_json(json.dumps(_graph("demo", compute_s=0.001)))
        first = service.place(graph, beta=1.0, lease_s=30)
        assert first.job_id and first.predicted_iteration_s
        before, measured = service.calibration().refits, 3 * first.predicted_iteration_s
        for k in (1.0, 1.05, 0.95):
            service.report(first.job_id, k * measured)
        assert service.calibration().needed is None  # what the demo read before: it then waited for nothing ("0 refits")
        wait = await_refit(service.calibration, before)
        assert wait.landed and not wait.timed_out
        assert wait.line().startswith("refit: 1 refits of 3 measurements, fitted jobs.")
        service.release(first.job_id)
        again = service.place(graph, beta=1.0)
        assert abs((again.predicted_iteration_s or 0) / measured - 1) < 0.2  # was 3x off before the reports
    finally:
        service.close()


def _state(**fields) -> CalibrationState:
    base = {"measurements": 3, "needed": None, "fitted": {}, "median_error": None, "refits": 0, "refit_at": None, "pending": False}
    return CalibrationState(**(base | {"last_error": None} | fields))


def _suspect() -> SuspectReport:
    return SuspectReport(graph="demo", devices=["s0-g0"], step_time_s=0.02, predicted_s=0.001, ratio=20.0, why="> 10x")


def test_a_refit_that_has_not_landed_is_said_plainly():
    pending = await_refit(lambda: _state(pending=True), before=0, timeout_s=0.3, poll_s=0.05)
    assert pending.timed_out and not pending.landed and "not landed, still running after" in pending.line()
    cases = [
        (_state(needed=4), "not landed, 3 measurements kept, a fit needs 4"),
        (_state(measurements=1, needed=2, suspects=[_suspect(), _suspect()]), "1 measurements kept (2 held as suspect), a fit needs 2"),
        (_state(needed=2, last_error="refit process failed:\n  BrokenProcessPool"), "it failed: refit process failed: BrokenProcessPool"),
        (_state(measurements=0), "not landed, no report was kept (0 held as suspect)"),
    ]
    for state, words in cases:
        wait = await_refit(lambda state=state: state, before=0)
        assert not wait.landed and words in wait.line() and "the model in use is still the one before the reports" in wait.line()
    assert await_refit(lambda: _state(refits=2), before=1).landed
