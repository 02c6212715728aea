"""The service's state: which job holds each device, leases, idempotent answers, the cost model in use.

Every method is thread-safe (one lock; per-graph cost-model work and refits run outside it).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from datetime import UTC, datetime
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

from placer.api.session import Placer
from placer.api.types import PlacementDecision
from placer.baselines.policy import Policy
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.common.lru import LRUCache
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph, job_graph_from_document
from placer.serve.clock import Clock
from placer.serve.errors import (
    IdempotencyConflictError,
    JobGraphUnavailableError,
    LeaseExpiredError,
    NoLeaseError,
    StateUnavailableError,
    UnknownGraphKeyError,
    UnknownJobError,
)
from placer.serve.graphs import GraphPool, TenantGraph, graph_owner
from placer.serve.parsing import check_graph_size, parse_request, request_digest
from placer.serve.refit import Refitter
from placer.serve.reservations import Reservation, ReservationStore
from placer.serve.schemas import (
    ClusterOccupancy,
    DeviceState,
    GraphPlacement,
    LeaseRenewal,
    Placement,
    PlacementRequest,
    RunningJob,
    StepTimeReport,
    stored_answer,
)
from placer.serve.settings import ServiceSettings
from placer.serve.stored import graph_document, running_job
from placer.serve.tenants import DEFAULT_TENANT, Tenant, legacy_key

Answer = TypeVar("Answer", bound=BaseModel)

log = logging.getLogger("placer.serve")

EXPIRED_REMEMBERED = 10_000  # job ids whose lease ran out, to answer 410 rather than 404
WARM_GRAPHS = 16  # graphs priced on a refitted cost model before it is swapped in


class Occupancy:
    """Which job holds each device, backed by a :class:`ReservationStore`; decisions by one :class:`Placer`.

    Requests it refuses raise the domain errors of :mod:`placer.serve.errors` (or another
    :class:`PlacerError` for bad input); it knows nothing of HTTP.
    """

    def __init__(self, cluster: Cluster, policy: Policy, settings: ServiceSettings | None = None, clock: Clock | None = None) -> None:
        """``clock``: leases' deadlines (monotonic) and stored times (wall); :class:`~placer.serve.clock.Clock`'s by default."""
        settings = settings or ServiceSettings()
        self.cluster, self.policy, self.settings = cluster, policy, settings
        self.clock = clock or Clock()
        self.deadlines: dict[str, float] = {}  # job id -> the monotonic time its lease runs out (leased jobs only)
        self.max_graph_ops, self.max_graph_edges = settings.max_graph_ops, settings.max_graph_edges
        self.max_cached_graphs = settings.max_cached_graphs
        self.cache_bytes = settings.cache_bytes
        self.placer = Placer(self._cost_model(cluster), policy)  # one policy for the server's life: it learns the workload online
        self.holder: list[str | None] = [None] * cluster.num_devices
        self.jobs: dict[str, RunningJob] = {}
        self.job_graphs: dict[str, JobGraph] = {}  # running jobs' graphs (for their step-time reports), held in self.graphs
        self.graphs = GraphPool(self.cache_bytes / 2, self.max_cached_graphs)  # every graph kept, one per content key
        self.expired: LRUCache[str, tuple[float, str | None]] = LRUCache(EXPIRED_REMEMBERED)  # job id -> (when, owner)
        self._unsaved: dict[str, tuple[float, str | None]] = {}  # expiries freed in memory, not yet written (the state file refused them)
        self._documents: LRUCache[str, str] = LRUCache(64, max_bytes=settings.cache_bytes / 8, sizeof=len)  # reporting graphs' JSON
        names = [cluster.device_name(d) for d in range(cluster.num_devices)]
        self.store = ReservationStore(
            settings.state_path,
            cluster=cluster.name,
            devices=names,
            reset=settings.reset_state,
            create_folder=settings.create_state_folder,
        )
        try:
            self._restore()
        except PlacerError:
            self.store.close()
            raise
        self.lock = threading.Lock()
        try:
            access = settings.access()
            tenant_names = frozenset(t.name for t in access.tenants)
            self.refitter = Refitter(
                cluster, self.store, self._use, self._recent, self.placer.cost, access.trusted, graphs=self.graphs, tenants=tenant_names
            )
        except PlacerError:
            self.store.close()
            raise

    def _restore(self) -> None:
        """Read the state file back: the reservations that survived a restart, the leases that ran out before it (410,
        not 404), and its idempotency answers checked (one line at start, not a 500 at the first retry)."""
        self.store.check_answers(stored_answer)  # a placement's or a resize's
        for r in self.store.load():
            self._hold(r)
            if r.lease_s is not None and r.expires_at_s is not None:  # the remaining lease, never longer than granted
                self.deadlines[r.job_id] = self.clock.restored(r.expires_at_s, r.lease_s)
        for job_id, expires_at_s, owner in self.store.expired():  # leases that ran out before it: 410, not 404
            self.expired[job_id] = (expires_at_s, owner)

    def _recent(self) -> list[JobGraph]:
        """The graphs a refitted model prices before it is used: the :data:`WARM_GRAPHS` placed most recently."""
        return self.graphs.recent(WARM_GRAPHS)

    @property
    def cost(self) -> CostModel:
        """The cost model in use (a refit swaps it)."""
        return self.placer.cost

    def _cost_model(self, cluster: Cluster) -> CostModel:
        return CostModel(cluster, max_graphs=self.max_cached_graphs, max_graph_bytes=self.cache_bytes / 2)

    def _use(self, fitted: Cluster, priced: tuple[tuple, list, list]) -> CostModel:
        """Swap in, and return, the cost model of a refitted cluster (called by the refit thread): it takes the graph-side
        caches of the model in use and ``priced``, the refit worker's predictions for the :data:`WARM_GRAPHS` graphs placed
        most recently (every degree on the idle cluster) and the reporting jobs' shapes, so no request pays for a cold model
        and this process computes none of it."""
        cost = self.cost.rebased(fitted)
        cost.adopt(priced)
        with self.lock:
            self.placer.cost = cost
        return cost

    def _hold(self, r: Reservation) -> None:
        self.jobs[r.job_id] = running_job(r)
        for name in r.devices:
            self.holder[self.cluster.device_index[name]] = r.job_id

    def _free(self, job_id: str) -> RunningJob:
        job = self.jobs.pop(job_id)
        self.deadlines.pop(job_id, None)
        graph = self.job_graphs.pop(job_id, None)
        if graph is not None:
            self.graphs.let_go(graph.key, job_id)
        for name in job.devices:
            self.holder[self.cluster.device_index[name]] = None
        return job

    # -- requests ---------------------------------------------------------------------
    def parse(self, body: bytes) -> PlacementRequest:
        """The request in ``body`` (:func:`placer.serve.parsing.parse_request` under this server's graph limits)."""
        return parse_request(body, self.max_graph_ops, self.max_graph_edges)

    def graph(self, request: Placement, holder: str, tenant: Tenant = DEFAULT_TENANT) -> JobGraph:
        """The request's graph as ``tenant``'s (:class:`~placer.serve.graphs.TenantGraph`: its key, caches and fitted constants its
        own), built from its document, looked up by key or given built (:class:`GraphPlacement`), held by ``holder`` in :attr:`graphs`
        (the one copy of its key); another tenant's key is unknown to it (as a key never seen); :class:`GraphMemoryFullError` if full."""
        if isinstance(request, GraphPlacement):
            check_graph_size(request.graph, self.max_graph_ops, self.max_graph_edges)
            return self._admit(request.graph, holder, tenant)
        if request.graph_key is not None:
            graph = self.graphs.get(request.graph_key)
            if graph is None or graph_owner(graph, DEFAULT_TENANT.name) != tenant.name:
                raise UnknownGraphKeyError(f"unknown graph_key {request.graph_key!r}: send the graph")
            return self.graphs.admit(graph, holder)
        if request.graph is None:  # the schema asks for a graph or a graph_key; this method drops the graph once read
            raise RuntimeError("the request's graph was already read")
        graph = job_graph_from_document(request.graph, source="graph")  # a PlacerError (bad input) if it is not a valid graph
        request.graph = None  # the document's dicts now belong to the graph: drop the other reference
        return self._admit(graph, holder, tenant)

    def _admit(self, graph: JobGraph, holder: str, tenant: Tenant) -> JobGraph:
        """``graph``, a request's new graph, as ``tenant``'s, held by ``holder`` (the copy kept before if there is one), warmed."""
        if tenant.name != DEFAULT_TENANT.name:  # (the single tenant of a server without tenants keeps content keys)
            graph = TenantGraph.of(graph, tenant.name)
        graph = self.graphs.admit(graph, holder)  # a copy kept before is used, this one dropped
        self._warm(graph)
        return graph

    def _warm(self, graph: JobGraph) -> None:
        """Per-graph cost-model work (profiles, sequential time) outside the lock: a big graph delays no one else."""
        cost = self.cost
        cost.sequential_jct_s(graph)
        cost.compile(graph)

    def place(self, request: Placement, idempotency_key: str | None = None, tenant: Tenant = DEFAULT_TENANT) -> PlacementDecision:
        """Decide for ``request`` (parsed by :meth:`parse`, or made in this process); reserve when accepted, for ``tenant``.
        A repeated ``idempotency_key`` (the same tenant's: keys are scoped per tenant) gets the first answer."""
        digest = None
        given, idempotency_key = idempotency_key, None if idempotency_key is None else tenant.scoped(idempotency_key)
        if idempotency_key is not None:  # a retry matches on the request's parsed JSON, not its bytes (spacing, key order)
            digest = request_digest(request)
            with self.lock:
                first = self._answered(idempotency_key, digest, given)
            if first is not None:
                return first
        holder = f"placing {uuid.uuid4().hex}"  # holds the graph while it is placed, then the job (if accepted) does
        graph = self.graph(request, holder, tenant)
        try:
            return self._decide(request, graph, tenant, idempotency_key, digest, given)
        finally:
            self.graphs.let_go(graph.key, holder)

    def _decide(
        self, request: Placement, graph: JobGraph, tenant: Tenant, idempotency_key: str | None, digest: str | None, given: str | None
    ) -> PlacementDecision:
        with self.lock:
            if idempotency_key is not None and digest is not None and (first := self._answered(idempotency_key, digest, given)) is not None:
                return first  # a concurrent retry answered while this one parsed
            self._expire_leases()
            now = self.clock.wall()
            free = np.array([h is None for h in self.holder])
            free_in = np.zeros(len(free))
            for job in self.jobs.values():
                remaining = max(job.reserved_at_s + job.predicted_jct_s - now, 0.0)
                free_in[[self.cluster.device_index[d] for d in job.devices]] = remaining
            decision = self.placer.decide(graph, free, free_in, beta=request.beta, iterations=request.iterations, running=len(self.jobs))
            reservation = None
            if decision.accepted:
                assert decision.predicted_jct_s is not None  # an accepted decision carries its JCT
                decision.job_id = uuid.uuid4().hex
                lease = request.lease_s
                deadline, expires = (None, None) if lease is None else self.clock.deadline(lease)
                reservation = Reservation(
                    decision.job_id,
                    graph.name,
                    tuple(decision.devices),
                    now,
                    decision.predicted_jct_s,
                    graph.key,
                    lease,
                    expires,
                    tenant.name,
                )
            answer = None if idempotency_key is None or digest is None else (idempotency_key, digest, decision.model_dump_json())
            if reservation is not None or answer is not None:
                self._saved().add(reservation, answer=answer)  # committed before anyone hears of it
            if reservation is not None:
                self._hold(reservation)
                if deadline is not None:
                    self.deadlines[reservation.job_id] = deadline
                self.job_graphs[reservation.job_id] = graph
                self.graphs.hold(graph.key, reservation.job_id)
        return decision

    def _answered(self, key: str, digest: str, given: str | None) -> PlacementDecision | None:
        return self.stored_answer(key, digest, given, PlacementDecision)

    def stored_answer(self, key: str, digest: str, given: str | None, model: type[Answer]) -> Answer | None:
        """The answer stored under idempotency ``key`` as ``model`` (None if none); a conflict if the key's request differed.

        ``digest``: the sha256 of the request now; ``given``: the key as the client gave it (for the message)."""
        stored = self.store.answer(key)
        if stored is None and (legacy := legacy_key(key)) is not None:  # the single tenant's, stored before keys were scoped
            stored = self.store.answer(legacy)
        if stored is None:
            return None
        if stored[0] != digest:
            raise IdempotencyConflictError(f"idempotency key {(given or key)[:64]!r} was used for a different request")
        return model.model_validate_json(stored[1])

    def release(self, job_id: str, tenant: Tenant = DEFAULT_TENANT) -> RunningJob:
        """Free a job's devices (``tenant``'s job, or any for an admin)."""
        with self.lock:
            self._expire_leases()
            self._running_or_raise(job_id, tenant)
            self._saved().remove(job_id)
            return self._free(job_id)

    def renew(self, job_id: str, renewal: LeaseRenewal, tenant: Tenant = DEFAULT_TENANT) -> RunningJob:
        """Extend a job's lease (``tenant``'s, or any for an admin) from now by ``renewal.lease_s`` (default: its own)."""
        with self.lock:
            self._expire_leases()
            job = self._running_or_raise(job_id, tenant)
            lease = renewal.lease_s or job.lease_s
            if lease is None:
                raise NoLeaseError(f"job {job_id!r} has no lease: give lease_s to start one")
            deadline, expires = self.clock.deadline(lease)
            self._saved().renew(job_id, lease, expires)
            self.deadlines[job_id] = deadline
            self.jobs[job_id] = job.model_copy(update={"lease_s": lease, "expires_at_s": expires})
            return self.jobs[job_id]

    def owned(self, job_id: str, tenant: Tenant) -> tuple[RunningJob, JobGraph]:
        """The running job ``job_id`` that ``tenant`` may act on, leases swept first, and its graph (caller holds the lock);
        :class:`JobGraphUnavailableError` for a job placed before this server started."""
        self._expire_leases()
        job = self._running_or_raise(job_id, tenant)
        graph = self.job_graphs.get(job_id)
        if graph is None:
            raise JobGraphUnavailableError(f"job {job_id!r} was placed before this server started: its graph is not known here")
        return job, graph

    def move(self, job_id: str, devices: tuple[str, ...], predicted_jct_s: float, answer: tuple[str, str, str] | None) -> RunningJob:
        """Swap a running job's devices and predicted JCT (caller holds the lock, has checked the devices are free for it),
        committed with ``answer`` (an idempotency key's) in one transaction before anyone hears of it."""
        self._saved().move(job_id, devices, predicted_jct_s, answer=answer)
        job = self.jobs[job_id]
        for name in job.devices:
            self.holder[self.cluster.device_index[name]] = None
        for name in devices:
            self.holder[self.cluster.device_index[name]] = job_id
        self.jobs[job_id] = job.model_copy(update={"devices": list(devices), "predicted_jct_s": predicted_jct_s})
        return self.jobs[job_id]

    def report(self, job_id: str, report: StepTimeReport, tenant: Tenant = DEFAULT_TENANT) -> None:
        """Keep a running job's measured step time, reported by ``tenant`` (its owner, or an admin), and queue a refit
        (:class:`CalibrationError` for an implausible one: nothing changes)."""
        with self.lock:
            job = self._running_or_raise(job_id, tenant)
            graph = self.job_graphs.get(job_id)
        if graph is None:
            raise JobGraphUnavailableError(f"job {job_id!r} was placed before this server started: its graph is not known here")
        # CalibrationError (bad input) if implausible:
        row = self.refitter.check(graph, tuple(job.devices), report.step_time_s, source=tenant.name)
        document = self._documents.get(graph.key)  # serialised once per graph, outside the lock
        if document is None:
            document = self._documents[graph.key] = graph_document(graph)
        with self.lock:
            self.refitter.keep(row, self.clock.wall(), document)

    def _running_or_raise(self, job_id: str, tenant: Tenant) -> RunningJob:
        """The running job ``job_id`` if ``tenant`` may act on it; another tenant's job is unknown to it (404, as a job that
        never ran: its id is not confirmed to others), a lease that ran out is 410 to its owner."""
        job = self.jobs.get(job_id)
        if job is not None and tenant.may_act_on(job.owner):
            return job
        expired = self.expired.get(job_id)
        if job is None and expired is not None and tenant.may_act_on(expired[1]):
            stamp = datetime.fromtimestamp(expired[0], UTC).isoformat(timespec="seconds")
            raise LeaseExpiredError(f"job {job_id[:64]!r}: its lease ran out at {stamp} and its devices were freed")
        raise UnknownJobError(f"no running job {job_id[:64]!r}")

    def expire_leases(self) -> list[str]:
        with self.lock:
            return self._expire_leases()

    def _expire_leases(self) -> list[str]:
        """Free the jobs whose lease ran out (caller holds the lock); their ids, logged. Never refused by the state file:
        expiries it cannot take now (a full disk) wait in memory, so reads go on, and :meth:`_saved` writes them before
        any other write (a restart before that expires those leases again, from the file)."""
        now, wall = self.clock.monotonic(), self.clock.wall()
        due = [job_id for job_id, deadline in self.deadlines.items() if deadline <= now]
        expiry = {job_id: wall - (now - self.deadlines[job_id]) for job_id in due}  # when it ran out, on the wall clock
        for job_id, expires_at_s in expiry.items():
            owner = self.jobs[job_id].owner
            job = self._free(job_id)
            self.expired[job_id] = self._unsaved[job_id] = (expires_at_s, owner)
            log.warning("lease of job %s (%s on %s) ran out unrenewed: devices freed", job_id, job.graph, " ".join(job.devices))
        with contextlib.suppress(StateUnavailableError):  # (logged by the store, once per episode)
            self._saved()
        return list(expiry)

    def _saved(self) -> ReservationStore:
        """The store, once the expiries freed in memory are written (caller holds the lock): a write that follows one
        (devices handed to another job) never reaches the file before it. :class:`StateUnavailableError` if they cannot be."""
        if self._unsaved:
            self.store.expire([(job_id, when, owner) for job_id, (when, owner) in self._unsaved.items()])
            self._unsaved.clear()
        return self.store

    def snapshot(self, tenant: Tenant = DEFAULT_TENANT) -> ClusterOccupancy:
        """The occupancy as ``tenant`` may see it: its own jobs (an admin: every job), others' devices busy without ids."""
        with self.lock:
            self._expire_leases()
            c = self.cluster
            mine = {job_id for job_id, job in self.jobs.items() if tenant.may_act_on(job.owner)}
            devices = [
                DeviceState(
                    device=c.device_name(d),
                    server=int(c.server_of[d]),
                    device_type=c.device_type[d],
                    job_id=self.holder[d] if self.holder[d] in mine else None,
                    busy=self.holder[d] is not None,
                )
                for d in range(c.num_devices)
            ]
            return ClusterOccupancy(
                cluster=c.name,
                devices_total=c.num_devices,
                devices_free=sum(h is None for h in self.holder),
                jobs=[job for job_id, job in self.jobs.items() if job_id in mine],
                devices=devices,
            )

    def close(self) -> None:
        self.refitter.close()
        with self.lock:
            self.store.close()
