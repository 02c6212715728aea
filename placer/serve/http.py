"""HTTP placement service that tracks the cluster's occupancy (FastAPI).

    placer serve --cluster pacml --policy-file data/policies/pacml.pt --port 8000

``POST /v1/placements`` decides and, when accepted, reserves the devices under a lock (two
requests never get the same device); a request may name a graph sent before by its
``graph_key`` (from any response) instead of sending it again; ``DELETE /v1/jobs/{id}`` releases them; ``GET /v1/cluster``
shows occupancy; ``GET /v1/health``; OpenAPI docs at ``/docs``. The policy is loaded once at
start from a server-side path: no request names a file. Bodies over ``max_body_bytes`` get 413.

Access: with a ``token`` every route but ``/v1/health`` needs ``Authorization: Bearer TOKEN``
(401 otherwise); with ``allowed_hosts`` a request whose ``Host`` header names another host gets
400 (a browser page on another site cannot reach the service by DNS rebinding). Error bodies are
capped at a few KB and never quote more than a short piece of the input.
"""

from __future__ import annotations

import hmac
import threading
import time
import uuid
from collections import OrderedDict
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from placer.baselines.registry import Policy
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.cost import CostModel
from placer.graphs.job_graph import MAX_ITERATIONS, JobGraph, job_graph_from_dict
from placer.serve.query import PlacementDecision, decide
from placer.serve.reservations import Reservation, ReservationStore

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_GRAPH_OPS = 200_000  # ops (forward + backward) per graph
GRAPH_CACHE_SIZE = 256
MAX_ERROR_CHARS = 1000  # per message in an error body
MAX_ERRORS = 20  # validation errors listed in one body


class PlacementRequest(BaseModel):
    """A job to place: ``graph`` (the whole graph) or ``graph_key`` (one this server has seen).

    Types are strict: ``"beta": "0.5"`` or ``true`` is refused, not coerced.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    graph: dict[str, Any] | None = Field(default=None, description="a job graph as JobGraph.to_json writes it")
    graph_key: str | None = Field(default=None, max_length=64, description="the graph_key of an earlier response, instead of graph")
    beta: float = Field(gt=0, le=1, allow_inf_nan=False, description="deadline = beta x sequential JCT")
    iterations: int | None = Field(default=None, ge=1, le=MAX_ITERATIONS, description="training iterations (default: the graph's)")

    @model_validator(mode="after")
    def _one_graph(self) -> PlacementRequest:
        if (self.graph is None) == (self.graph_key is None):
            raise ValueError("give exactly one of 'graph' and 'graph_key'")
        return self


class RunningJob(BaseModel):
    job_id: str
    graph: str
    devices: list[str]
    reserved_at_s: float = Field(description="when the devices were reserved, Unix time in seconds (wall clock)")
    reserved_at: str = Field(description="the same as an ISO 8601 UTC timestamp")
    predicted_jct_s: float


class DeviceState(BaseModel):
    device: str
    server: int
    device_type: str
    job_id: str | None


class ClusterOccupancy(BaseModel):
    cluster: str
    devices_total: int
    devices_free: int
    jobs: list[RunningJob]
    devices: list[DeviceState]


class Occupancy:
    """Which job holds each device. All methods are thread-safe."""

    def __init__(
        self,
        cluster: Cluster,
        policy: Policy,
        *,
        max_graph_ops: int = DEFAULT_MAX_GRAPH_OPS,
        state: str | Path | None = None,
        max_cached_graphs: int = 512,
        reset_state: bool = False,
        create_state_folder: bool = False,
    ) -> None:
        self.cluster, self.policy = cluster, policy
        self.max_graph_ops = max_graph_ops
        self.cost = CostModel(cluster, max_graphs=max_cached_graphs)
        self.holder: list[str | None] = [None] * cluster.num_devices
        self.jobs: dict[str, RunningJob] = {}
        names = [cluster.device_name(d) for d in range(cluster.num_devices)]
        self.store = ReservationStore(state, cluster=cluster.name, devices=names, reset=reset_state, create_folder=create_state_folder)
        for r in self.store.load():  # reservations that survived a restart
            self.jobs[r.job_id] = _running(r)
            for name in r.devices:
                self.holder[cluster.device_index[name]] = r.job_id
        self.graphs: OrderedDict[str, JobGraph] = OrderedDict()  # graph_key -> graph, least recently used first
        self.lock = threading.Lock()

    def graph(self, request: PlacementRequest) -> JobGraph:
        """The request's graph: parsed and validated, or looked up by key."""
        if request.graph_key is not None:
            with self.lock:
                graph = self.graphs.get(request.graph_key)
                if graph is None:
                    raise HTTPException(status_code=404, detail=f"unknown graph_key {request.graph_key!r}: send the graph")
                self.graphs.move_to_end(request.graph_key)
            return graph
        nodes = (request.graph.get("graph") or {}).get("nodes") if isinstance(request.graph.get("graph"), dict) else None
        if isinstance(nodes, list) and len(nodes) > self.max_graph_ops:
            raise HTTPException(status_code=413, detail=f"graph has {len(nodes)} ops; this server accepts at most {self.max_graph_ops}")
        try:
            graph = job_graph_from_dict(request.graph, source="graph")
        except PlacerError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None
        self._warm(graph)
        with self.lock:
            self.graphs[graph.key] = graph
            self.graphs.move_to_end(graph.key)
            while len(self.graphs) > GRAPH_CACHE_SIZE:
                self.graphs.popitem(last=False)
        return graph

    def _warm(self, graph: JobGraph) -> None:
        """Per-graph cost-model work (profiles, sequential time) outside the lock: a big graph delays no one else."""
        self.cost.sequential_jct_s(graph)
        self.cost.compile(graph)

    def place(self, request: PlacementRequest) -> PlacementDecision:
        graph = self.graph(request)
        with self.lock:
            now = time.time()
            free = np.array([h is None for h in self.holder])
            free_in = np.zeros(len(free))
            for job in self.jobs.values():
                remaining = max(job.reserved_at_s + job.predicted_jct_s - now, 0.0)
                free_in[[self.cluster.device_index[d] for d in job.devices]] = remaining
            decision = decide(
                graph, self.cost, free, free_in, self.policy, beta=request.beta, iterations=request.iterations, running=len(self.jobs)
            )
            if decision.accepted:
                job_id = uuid.uuid4().hex
                reservation = Reservation(job_id, graph.name, tuple(decision.devices), now, decision.predicted_jct_s)
                self.store.add(reservation)  # committed before anyone hears of it
                for name in decision.devices:
                    self.holder[self.cluster.device_index[name]] = job_id
                self.jobs[job_id] = _running(reservation)
                decision.job_id = job_id
        return decision

    def release(self, job_id: str) -> RunningJob:
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None:
                raise HTTPException(status_code=404, detail=f"no running job {job_id!r}"[:200])
            self.store.remove(job_id)
            del self.jobs[job_id]
            for name in job.devices:
                self.holder[self.cluster.device_index[name]] = None
        return job

    def snapshot(self) -> ClusterOccupancy:
        with self.lock:
            c = self.cluster
            devices = [
                DeviceState(device=c.device_name(d), server=int(c.server_of[d]), device_type=c.device_type[d], job_id=self.holder[d])
                for d in range(c.num_devices)
            ]
            return ClusterOccupancy(
                cluster=c.name,
                devices_total=c.num_devices,
                devices_free=sum(h is None for h in self.holder),
                jobs=list(self.jobs.values()),
                devices=devices,
            )


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``limit`` bytes, declared or streamed (chunked).

    The body is read whole before the app sees it, so an oversized stream is refused with 413
    however it is sent, and the app never parses a partial body.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._reject(send)
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, _replay([message], receive), send)
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                return await self._reject(send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    async def _reject(self, send: Send) -> None:
        response = JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        await response({"type": "http"}, None, send)


def _running(r: Reservation) -> RunningJob:
    stamp = datetime.fromtimestamp(r.reserved_at_s, UTC).isoformat(timespec="milliseconds")
    return RunningJob(
        job_id=r.job_id,
        graph=r.graph,
        devices=list(r.devices),
        reserved_at_s=r.reserved_at_s,
        reserved_at=stamp,
        predicted_jct_s=r.predicted_jct_s,
    )


def _replay(messages: list[dict], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> dict:
        return pending.pop(0) if pending else await receive()

    return replayed


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


class BearerToken:
    """ASGI middleware: every route but the health check needs ``Authorization: Bearer TOKEN``."""

    OPEN_PATHS = ("/v1/health",)

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self.OPEN_PATHS:
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse(
                    {"detail": "missing or wrong bearer token"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


def create_app(
    cluster: Cluster,
    policy: Policy,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_graph_ops: int = DEFAULT_MAX_GRAPH_OPS,
    state_path: str | Path | None = None,
    max_cached_graphs: int = 512,
    reset_state: bool = False,
    create_state_folder: bool = False,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> FastAPI:
    """The service app. ``state_path``: the SQLite file of reservations (None: memory only; see
    :class:`~placer.serve.reservations.ReservationStore` for ``reset_state`` and
    ``create_state_folder``); ``max_cached_graphs``: graphs whose cost-model work is kept (LRU);
    ``token``: the bearer token every request but the health check must carry (None: none);
    ``allowed_hosts``: the host names a request's ``Host`` header may name (None: any)."""
    state = Occupancy(
        cluster,
        policy,
        max_graph_ops=max_graph_ops,
        state=state_path,
        max_cached_graphs=max_cached_graphs,
        reset_state=reset_state,
        create_state_folder=create_state_folder,
    )
    instance = {"instance_id": uuid.uuid4().hex, "started_at": datetime.now(UTC).isoformat(timespec="seconds")}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        with state.lock:
            state.store.close()  # a clean stop leaves no -wal or -shm file and frees the state file's lock

    app = FastAPI(title="placer", version="1", description="Partitioning and placement of DNN training jobs.", lifespan=lifespan)
    app.state.occupancy = state

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_errors(exc.errors())}, status_code=422)

    @app.exception_handler(PlacerError)
    async def placer_error(request: Request, exc: PlacerError) -> JSONResponse:
        return JSONResponse({"detail": _text(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": _text(exc.detail)}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.post("/v1/placements", response_model=PlacementDecision)
    def create_placement(request: PlacementRequest) -> PlacementDecision:
        """Decide degree and devices; reserve them when accepted (the response's job_id)."""
        return state.place(request)

    @app.delete("/v1/jobs/{job_id}", response_model=RunningJob)
    def release_job(job_id: str) -> RunningJob:
        """Release a job's devices."""
        return state.release(job_id)

    @app.get("/v1/cluster", response_model=ClusterOccupancy)
    def cluster_occupancy() -> ClusterOccupancy:
        return state.snapshot()

    @app.get("/v1/health")
    def health() -> dict:
        return {"status": "ok", "cluster": cluster.name, "policy": getattr(policy, "name", ""), "jobs": len(state.jobs), **instance}

    app.add_middleware(BodyLimit, limit=max_body_bytes)
    if token is not None:
        app.add_middleware(BearerToken, token=token)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)  # outermost: checked first
    return app
