"""Who decides and holds reservations for the Ray integration: a running ``placer serve`` over HTTP
(:class:`HttpService`), or the same service state in this process (:class:`LocalService`).

Both answer the service's calls with the service's wire types: place (decide and reserve),
renew a lease, resize (move a running job to another degree or other devices), release, report a
step time, read the calibration and the occupancy. An error
the service answers becomes a :class:`ServiceError` of one line (its status and detail).
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from typing import Protocol

from pydantic import ValidationError

from placer.api.types import PlacementDecision
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.graphs.job_graph import JobGraph
from placer.serve.schemas import CalibrationState, ClusterOccupancy, LeaseRenewal, ResizeDecision, ResizeRequest, RunningJob, StepTimeReport


class ServiceError(PlacerError):
    """The placement service refused a call or could not be reached."""


class LeaseLostError(ServiceError):
    """The job's lease ran out (its devices were freed) before it was renewed or released."""


class PlacementService(Protocol):
    def place(self, graph: JobGraph, *, beta: float, lease_s: float | None = None, iterations: int | None = None) -> PlacementDecision: ...
    def renew(self, job_id: str) -> RunningJob: ...
    def resize(
        self, job_id: str, degree: int | None = None, *, devices: list[str] | None = None, idempotency_key: str | None = None
    ) -> ResizeDecision: ...
    def release(self, job_id: str) -> RunningJob: ...
    def report(self, job_id: str, step_time_s: float) -> CalibrationState: ...
    def calibration(self) -> CalibrationState: ...
    def occupancy(self) -> ClusterOccupancy: ...


def placement_body(graph: JobGraph, beta: float, lease_s: float | None, iterations: int | None) -> bytes:
    """The ``POST /v1/placements`` body for ``graph``."""
    body: dict = {"graph": graph.to_dict(), "beta": float(beta)}
    if lease_s is not None:
        body["lease_s"] = float(lease_s)
    if iterations is not None:
        body["iterations"] = int(iterations)
    return json.dumps(body).encode()


def resize_request(degree: int | None, devices: list[str] | None) -> ResizeRequest:
    """The ``POST /v1/jobs/{id}/resize`` body; a one-line :class:`ServiceError` for one the service would refuse unread."""
    try:
        return ResizeRequest(degree=degree, devices=devices)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise ServiceError(f"resize: {first['msg']}") from None


class HttpService:
    """A running ``placer serve`` at ``url`` (e.g. ``http://127.0.0.1:8000``), with its bearer ``token`` if it has one."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.url, self.token, self.timeout_s = url.rstrip("/"), token, timeout_s

    def _call(self, method: str, path: str, body: bytes | None = None, key: str | None = None) -> dict:
        headers = {"Content-Type": "application/json"} | ({"Idempotency-Key": key} if key else {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            kind = LeaseLostError if exc.code == 410 else ServiceError
            raise kind(f"{method} {path}: {exc.code} {' '.join(detail.split())}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ServiceError(f"cannot reach the placement service at {self.url}: {getattr(exc, 'reason', exc)}") from None

    def place(self, graph: JobGraph, *, beta: float, lease_s: float | None = None, iterations: int | None = None) -> PlacementDecision:
        return PlacementDecision.model_validate(self._call("POST", "/v1/placements", placement_body(graph, beta, lease_s, iterations)))

    def renew(self, job_id: str) -> RunningJob:
        return RunningJob.model_validate(self._call("POST", f"/v1/jobs/{job_id}/lease", b"{}"))

    def resize(
        self, job_id: str, degree: int | None = None, *, devices: list[str] | None = None, idempotency_key: str | None = None
    ) -> ResizeDecision:
        """``POST /v1/jobs/{id}/resize``: move the job to ``degree`` devices (the service picks them) or to ``devices``."""
        body = resize_request(degree, devices).model_dump_json(exclude_none=True).encode()
        return ResizeDecision.model_validate(self._call("POST", f"/v1/jobs/{job_id}/resize", body, idempotency_key))

    def release(self, job_id: str) -> RunningJob:
        return RunningJob.model_validate(self._call("DELETE", f"/v1/jobs/{job_id}"))

    def report(self, job_id: str, step_time_s: float) -> CalibrationState:
        body = json.dumps({"step_time_s": float(step_time_s)}).encode()
        return CalibrationState.model_validate(self._call("POST", f"/v1/jobs/{job_id}/step-times", body))

    def calibration(self) -> CalibrationState:
        return CalibrationState.model_validate(self._call("GET", "/v1/calibration"))

    def occupancy(self) -> ClusterOccupancy:
        return ClusterOccupancy.model_validate(self._call("GET", "/v1/cluster"))


class LocalService:
    """The service's state (occupancy, leases, online refit) in this process, in memory, deciding with ``policy``."""

    def __init__(self, cluster: Cluster, policy: str = "lean") -> None:
        from placer.baselines.registry import PolicyContext, make_policy
        from placer.serve.occupancy import Occupancy

        self.state = Occupancy(cluster, make_policy(policy, PolicyContext(cluster)))

    def place(self, graph: JobGraph, *, beta: float, lease_s: float | None = None, iterations: int | None = None) -> PlacementDecision:
        from placer.serve.parsing import graph_placement

        return self.state.place(graph_placement(graph, beta, lease_s, iterations))  # the graph itself: nothing serialised

    def renew(self, job_id: str) -> RunningJob:
        with _lease_lost():
            return self.state.renew(job_id, LeaseRenewal())

    def resize(
        self, job_id: str, degree: int | None = None, *, devices: list[str] | None = None, idempotency_key: str | None = None
    ) -> ResizeDecision:
        from placer.serve.resizing import resize

        with _lease_lost():
            return resize(self.state, job_id, resize_request(degree, devices), idempotency_key)

    def release(self, job_id: str) -> RunningJob:
        with _lease_lost():
            return self.state.release(job_id)

    def report(self, job_id: str, step_time_s: float) -> CalibrationState:
        self.state.report(job_id, StepTimeReport(step_time_s=float(step_time_s)))
        return self.state.refitter.state

    def calibration(self) -> CalibrationState:
        return self.state.refitter.state

    def occupancy(self) -> ClusterOccupancy:
        return self.state.snapshot()

    def close(self) -> None:
        self.state.close()


@contextlib.contextmanager
def _lease_lost():
    """The service state's :class:`LeaseExpiredError` as the client's :class:`LeaseLostError`."""
    from placer.serve.errors import LeaseExpiredError

    try:
        yield
    except LeaseExpiredError as exc:
        raise LeaseLostError(str(exc)) from None
