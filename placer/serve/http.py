"""HTTP placement service that tracks the cluster's occupancy (FastAPI).

    placer serve --cluster pacml --policy-file data/policies/pacml.pt --port 8000

Routes (OpenAPI docs at ``/docs``):

- ``POST /v1/placements`` decides and, when accepted, reserves the devices under a lock (two
  requests never get the same device). A request may name a graph sent before by its
  ``graph_key`` instead of sending it again, and may ask for a ``lease_s``: the devices are freed
  (and logged) unless the holder renews within it. With an ``Idempotency-Key`` header a retry
  (after a lost answer, a crash) gets the first answer and reserves nothing more; the same key
  with another request (compared as parsed JSON, not bytes) gets 422.
- ``POST /v1/jobs/{id}/lease`` renews a lease; ``DELETE /v1/jobs/{id}`` releases (410 once a
  lease ran out).
- ``POST /v1/jobs/{id}/resize`` moves a running job to another degree or other devices (:mod:`placer.serve.resizing`:
  409 for devices held by another job, 422 for a graph that does not fit); ``GET /v1/jobs/{id}/resize-proposal`` says
  at which degree it would finish earliest on its own and the idle devices.
- ``POST /v1/jobs/{id}/step-times`` reports a running job's measured seconds per step; the cost
  model is refitted to the reports on a background thread (:mod:`placer.serve.refit`) and
  ``GET /v1/calibration`` shows what it fitted.
- ``GET /v1/cluster`` shows occupancy; ``GET /v1/health``.

The policy is loaded once at start from a server-side path: no request names a file. Bodies over
``max_body_bytes`` get 413 (any but a placement's or a resize's: over :data:`SMALL_BODY_BYTES`), bodies not received
within ``body_timeout_s`` 408. Graphs and their
cost-model work are cached up to ``cache_bytes`` (the settings: :class:`~placer.serve.settings.ServiceSettings`).
The state raises domain errors (:mod:`placer.serve.errors`); :data:`ERROR_STATUS` maps them to statuses.

POST routes need ``Content-Type: application/json``, bodiless ones too (415 otherwise: a page on
another site cannot send one without a preflight), and a POST or DELETE its browser says comes from
another site (``Sec-Fetch-Site``, ``Origin``) gets 403 (:class:`~placer.serve.middleware.SameSiteWrites`).
At most ``max_connections`` requests whose bodies have come are
served at once (503 beyond; the health check, which also answers ``HEAD``, is exempt);
connections themselves are guarded by :mod:`placer.serve.server`.

Access: with a ``token`` (or ``tenants``: named clients, :mod:`placer.serve.tenants`) every route
but ``/v1/health`` needs ``Authorization: Bearer TOKEN`` (401 otherwise); a job is its placing
tenant's: another's release, renewal or report gets 404, as for a job that never ran; with
``allowed_hosts`` a request whose ``Host`` header names another host gets 400 (a browser page
on another site cannot reach the service by DNS rebinding). Error bodies are capped at a few KB
and never quote more than a short piece of the input.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse

from placer.api.types import PlacementDecision
from placer.baselines.policy import Policy
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.serve.clock import Clock
from placer.serve.docs import add_docs
from placer.serve.errors import (
    DevicesBusyError,
    DoesNotFitError,
    GraphMemoryFullError,
    GraphTooLargeError,
    IdempotencyConflictError,
    InvalidRequestError,
    JobGraphUnavailableError,
    LeaseExpiredError,
    NoLeaseError,
    ReportsTooFrequentError,
    StateUnavailableError,
    UnknownGraphKeyError,
    UnknownJobError,
)
from placer.serve.logtext import escape_logs
from placer.serve.middleware import BearerToken, BodyLimit, JsonOnly, RequestLimit, SameSiteWrites
from placer.serve.occupancy import Occupancy
from placer.serve.ratelimit import RateLimiter
from placer.serve.resizing import proposal, resize
from placer.serve.schemas import (
    MAX_DEGREE,
    MAX_DEVICE_NAME_CHARS,
    CalibrationState,
    ClusterOccupancy,
    ErrorBody,
    LeaseRenewal,
    PlacementRequest,
    ResizeDecision,
    ResizeRequest,
    RunningJob,
    StepTimeReport,
)
from placer.serve.settings import ServiceSettings
from placer.serve.tenants import Tenant

# The one map from domain errors to HTTP statuses; an error takes the row of its nearest class here.
ERROR_STATUS: dict[type[PlacerError], int] = {
    PlacerError: 422,  # bad input: a graph document, beta, an implausible step time
    InvalidRequestError: 422,
    IdempotencyConflictError: 422,
    NoLeaseError: 422,
    UnknownGraphKeyError: 404,
    UnknownJobError: 404,
    JobGraphUnavailableError: 409,
    DevicesBusyError: 409,
    DoesNotFitError: 422,
    LeaseExpiredError: 410,
    GraphTooLargeError: 413,
    GraphMemoryFullError: 413,  # with Retry-After when room comes back as jobs are released (RFC 9110, 15.5.14)
    ReportsTooFrequentError: 429,
    StateUnavailableError: 503,
}
ERROR_MEANINGS = {  # every error answer's body is an ErrorBody; which statuses a route declares: _errors
    400: "a malformed request: two Authorization headers, a Host not allowed, ambiguous framing",
    401: "a missing or wrong bearer token",
    403: "a cross-site write from a browser",
    404: "no such job or graph_key (another tenant's answers the same)",
    408: "the body did not arrive in time",
    409: "devices held by another job, or a job whose graph this server does not know",
    410: "the job's lease ran out",
    413: "a body or graph larger than this server accepts, or graph memory full (Retry-After)",
    415: "a POST that is not Content-Type: application/json",
    422: "a request that is not valid: detail is one line, or the list of what is wrong",
    429: "too many step-time reports (Retry-After)",
    503: "too many requests or connections, or the state file cannot be written (Retry-After)",
}
COMMON_ERRORS = (400, 401, 408, 503)
MAX_ERROR_CHARS = 1000  # per message in an error body
MAX_ERRORS = 20  # validation errors listed in one body
SMALL_BODY_BYTES = 4096  # any body but a placement's or a resize's (a lease renewal, a step-time report: tens of bytes)
# a resize may name MAX_DEGREE devices (ResizeRequest): room for that many of the longest names, quoted, with ", " between
RESIZE_BODY_BYTES = MAX_DEGREE * (MAX_DEVICE_NAME_CHARS + 8) + SMALL_BODY_BYTES
LEASE_SWEEP_S = 1.0
_RETRY = "a retry with the same key gets the first answer"
_LEASE_BODY = "JSON: {} renews by the job's own lease_s (so does an empty body, sent as Content-Type: application/json)"

log = logging.getLogger("placer.serve")


def _text(value: object, limit: int = MAX_ERROR_CHARS) -> str:
    """``value`` as valid UTF-8 text of at most ``limit`` characters."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more characters)"


def _validation_errors(errors) -> list[dict]:
    """Pydantic errors without the offending input: it may be NaN, huge or not encodable, and echoing it helps no one."""
    out = []
    for e in errors[:MAX_ERRORS]:
        loc = [part if isinstance(part, int) else _text(part, 100) for part in list(e.get("loc", ()))[:10]]
        out.append({"loc": loc, "msg": _text(e.get("msg", "invalid")), "type": _text(e.get("type", ""), 100)})
    return out


def _errors(*statuses: int, common: tuple[int, ...] = COMMON_ERRORS) -> dict[int | str, dict[str, Any]]:
    """FastAPI ``responses=`` of a route: ``common`` and ``statuses``, each an :class:`ErrorBody`."""
    return {code: {"model": ErrorBody, "description": ERROR_MEANINGS[code]} for code in sorted({*common, *statuses})}


WRITE = (403, 404, 413, 415, 422)  # a POST's errors besides the common ones (413: over the small body limit)
JOB = (404, 410)


def error_status(exc: PlacerError) -> int:
    """The HTTP status of a domain error: the :data:`ERROR_STATUS` row of its nearest class."""
    return next(ERROR_STATUS[kind] for kind in type(exc).__mro__ if kind in ERROR_STATUS)


def create_app(cluster: Cluster, policy: Policy, settings: ServiceSettings | None = None, clock: Clock | None = None) -> FastAPI:
    """The service app: ``policy`` decides on ``cluster`` under ``settings`` (default: :class:`ServiceSettings`'s);
    ``clock``: the leases' clocks (:class:`~placer.serve.clock.Clock`: monotonic deadlines, wall times stored)."""
    settings = settings or ServiceSettings()
    escape_logs(log.name)  # graph names and job ids in the service's log lines are user text
    state = Occupancy(cluster, policy, settings, clock)
    instance = {"instance_id": uuid.uuid4().hex, "started_at": datetime.now(UTC).isoformat(timespec="seconds")}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        sweeper = asyncio.create_task(_sweep_leases(state))
        yield
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        state.close()  # a clean stop leaves no -wal or -shm file and frees the state file's lock

    app = FastAPI(
        title="placer",
        version="1",
        description="Partitioning and placement of DNN training jobs.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's Swagger UI and ReDoc load from a CDN: blank offline; /docs is placer.serve.docs' page
        redoc_url=None,
    )
    app.state.occupancy = state
    _add_error_handlers(app)
    _add_write_routes(app, state, settings)
    _add_read_routes(app, state, cluster, policy, instance)
    _register_schemas(app, PlacementRequest)
    add_docs(app)
    _add_middleware(app, settings)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answer an :class:`ErrorBody`: validation errors without their input, domain errors by :data:`ERROR_STATUS`."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_errors(exc.errors())}, status_code=422)

    @app.exception_handler(PlacerError)
    async def placer_error(request: Request, exc: PlacerError) -> JSONResponse:
        if isinstance(exc, InvalidRequestError) and exc.errors is not None:
            return JSONResponse({"detail": _validation_errors(exc.errors)}, status_code=error_status(exc))
        after = exc.retry_after_s if isinstance(exc, ReportsTooFrequentError | GraphMemoryFullError) else None
        retry = {"Retry-After": str(max(1, math.ceil(after)))} if after is not None else None
        return JSONResponse({"detail": _text(exc)}, status_code=error_status(exc), headers=retry)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": _text(exc.detail)}, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def _add_write_routes(app: FastAPI, state: Occupancy, settings: ServiceSettings) -> None:
    """The routes that place, renew, resize and report (and the resize proposal, beside its resize)."""
    reports = RateLimiter(settings.report_rate_per_s, settings.report_burst)

    @app.post(
        "/v1/placements",
        response_model=PlacementDecision,
        responses=_errors(*WRITE, 409),
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": _schema_ref(PlacementRequest)}}}},
    )
    async def create_placement(
        request: Request,
        idempotency_key: Annotated[str | None, Header(max_length=255, pattern=r"^[\x21-\x7e]+$", description=_RETRY)] = None,
    ) -> PlacementDecision:
        """Decide degree and devices; reserve them when accepted (the response's job_id)."""
        body = await request.body()  # parsed and validated in one pass, off the event loop
        return await run_in_threadpool(_place, state, body, idempotency_key, _tenant(request))

    @app.post(
        "/v1/jobs/{job_id}/lease",
        response_model=RunningJob,
        responses=_errors(*WRITE, *JOB),
        openapi_extra={"requestBody": {"required": True, "description": _LEASE_BODY}},  # (JsonOnly: 415 without a JSON type)
    )
    def renew_lease(job_id: str, request: Request, renewal: LeaseRenewal | None = None) -> RunningJob:
        """Renew a job's lease from now (by its own lease_s unless another is given)."""
        return state.renew(job_id, renewal or LeaseRenewal(), _tenant(request))

    @app.post("/v1/jobs/{job_id}/resize", response_model=ResizeDecision, responses=_errors(*WRITE, *JOB, 409))
    def resize_job(
        job_id: str,
        move: ResizeRequest,
        request: Request,
        idempotency_key: Annotated[str | None, Header(max_length=255, pattern=r"^[\x21-\x7e]+$", description=_RETRY)] = None,
    ) -> ResizeDecision:
        """Move a running job to ``degree`` devices (the service picks them) or to ``devices``, within its lease: the
        reservation is swapped at once; the answer gives the new step time and the pause the move costs."""
        return resize(state, job_id, move, idempotency_key, _tenant(request))

    @app.get("/v1/jobs/{job_id}/resize-proposal", response_model=ResizeDecision, responses=_errors(*JOB, 409, 422))
    def resize_proposal(job_id: str, request: Request) -> ResizeDecision:
        """The degree at which the job would finish earliest on its own and the idle devices, pause included (``moved``
        false: where it is); nothing is changed."""
        return proposal(state, job_id, _tenant(request))

    @app.post("/v1/jobs/{job_id}/step-times", response_model=CalibrationState, status_code=202, responses=_errors(*WRITE, *JOB, 409, 429))
    def report_step_time(job_id: str, report: StepTimeReport, request: Request) -> CalibrationState:
        """Report a running job's measured seconds per step; a refit is queued (GET /v1/calibration). A client sends at most
        ``report_rate_per_s`` a second (after a burst of ``report_burst``): 429 with Retry-After past that. (A client is its
        address, or the one a trusted proxy names in X-Forwarded-For: see ``ServiceSettings.trusted_proxies``.)"""
        wait = reports.take(request.client.host if request.client else "")
        if wait > 0:
            raise ReportsTooFrequentError(f"too many step-time reports from this client: at most {settings.report_rate_per_s:g}/s", wait)
        state.report(job_id, report, _tenant(request))
        return state.refitter.view(_tenant(request))


def _add_read_routes(app: FastAPI, state: Occupancy, cluster: Cluster, policy: Policy, instance: dict) -> None:
    """The calibration, the release, the occupancy and the health check."""

    @app.get("/v1/calibration", response_model=CalibrationState, responses=_errors())
    def calibration(request: Request) -> CalibrationState:
        """What the refits fitted: the shared constants and, but to an admin, the requesting tenant's own graphs' only."""
        return state.refitter.view(_tenant(request))

    @app.delete("/v1/jobs/{job_id}", response_model=RunningJob, responses=_errors(403, *JOB, 422))
    def release_job(job_id: str, request: Request) -> RunningJob:
        """Release a job's devices."""
        return state.release(job_id, _tenant(request))

    @app.get("/v1/cluster", response_model=ClusterOccupancy, responses=_errors())
    def cluster_occupancy(request: Request) -> ClusterOccupancy:
        """Devices and jobs: a plain tenant sees its own jobs and the devices others hold as busy, without their ids."""
        return state.snapshot(_tenant(request))

    @app.get("/v1/health", responses=_errors(common=(400, 503)))
    def health() -> dict:
        return {"status": "ok", "cluster": cluster.name, "policy": policy.name, "jobs": len(state.jobs), **instance}

    @app.head("/v1/health", include_in_schema=False)
    def health_head() -> dict:  # health checkers that probe with HEAD (the body is not sent)
        return health()


def _add_middleware(app: FastAPI, settings: ServiceSettings) -> None:
    """The guards around every route, innermost first (the last added runs first)."""
    app.add_middleware(RequestLimit, limit=settings.max_connections)  # inside BodyLimit: counts requests whose bodies are in
    app.add_middleware(
        BodyLimit,
        limit=settings.max_body_bytes,
        timeout_s=settings.body_timeout_s,
        small_limit=SMALL_BODY_BYTES,
        large_paths=("/v1/placements",),
        path_limits=((r"/v1/jobs/[^/]+/resize", RESIZE_BODY_BYTES),),
    )
    app.add_middleware(JsonOnly, routes=app.router.routes)  # the routes as added: every one is in by now
    app.add_middleware(SameSiteWrites, allowed_hosts=settings.allowed_hosts)
    app.add_middleware(BearerToken, tenants=settings.access())  # resolves the request's tenant (a tokenless server's one)
    if settings.allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts))  # outermost: checked first


def _place(state: Occupancy, body: bytes, idempotency_key: str | None, tenant: Tenant) -> PlacementDecision:
    """``POST /v1/placements``: the body parsed once, here at the edge, and the typed request placed."""
    return state.place(state.parse(body), idempotency_key, tenant)


def _tenant(request: Request) -> Tenant:
    """The request's tenant, resolved once by :class:`~placer.serve.middleware.BearerToken`."""
    return request.state.tenant


async def _sweep_leases(state: Occupancy) -> None:
    """Free expired leases every :data:`LEASE_SWEEP_S` (requests also sweep before they read occupancy)."""
    while True:
        await asyncio.sleep(LEASE_SWEEP_S)
        if any(j.expires_at_s is not None for j in list(state.jobs.values())):
            try:
                await run_in_threadpool(state.expire_leases)
            except Exception:  # the sweeper must outlive a failing sweep (a full disk); the next request sweeps too
                log.exception("lease sweep failed")


def _schema_ref(model) -> dict:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _register_schemas(app: FastAPI, model) -> None:
    """Put ``model``'s JSON schema (and the ones it refers to) into the OpenAPI components: the
    placement route reads its body itself (one validating pass over the bytes), so FastAPI does not."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = schema = original()  # the schema FastAPI keeps, completed in place
            defs = model.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(defs.pop("$defs", {}))
            components[model.__name__] = defs
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend its schema
