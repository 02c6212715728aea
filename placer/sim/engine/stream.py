"""Run one job stream through the compiled engine: arrays in, :class:`~placer.sim.rollout.RunResult` out.

:func:`run_program` gives the records, busy timeline and metrics that :func:`placer.sim.rollout.simulate` gives with
the heuristic the :class:`Program` describes (the differential tests hold the two equal on generated streams).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import networkx as nx
import numpy as np

from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.elastic import ResizeError
from placer.sim.metrics import compute_metrics
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import DecideFn, RunResult
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, JobRecord, Place, Reject
from placer.workloads.generator import JobSpec

from . import codes as k
from . import kernels
from .advisers import CompiledAdvisers, EngineAdvice
from .entry import compiled
from .prices import PriceBook
from .program import Program, external
from .records import avoidable, job_records
from .work import Work as Work  # where numba's cache index of an earlier install pickled it
from .work import work_arrays

_DISCIPLINES = {"fifo": 0, "edf": 1, "sjf": 2}


class Arrays(NamedTuple):
    """A run's inputs, state and records (the kernels' ``c``)."""

    graph: np.ndarray
    iters: np.ndarray
    arrival: np.ndarray
    beta: np.ndarray
    seq_jct: np.ndarray
    fastest: np.ndarray
    qi: np.ndarray
    free: np.ndarray
    free_at: np.ndarray
    server_of: np.ndarray
    dev_rate: np.ndarray
    dev_kind: np.ndarray
    dev_mem: np.ndarray
    n_mem: np.ndarray
    slots: np.ndarray  # the shapes' ids by key (placer.sim.engine.shapes)
    shape_keys: np.ndarray
    rep_dev: np.ndarray
    rep_deg: np.ndarray
    price: np.ndarray
    fits: np.ndarray
    need_g: np.ndarray
    need_s: np.ndarray
    seen: np.ndarray
    sizes: np.ndarray
    ht: np.ndarray
    hk: np.ndarray
    hs: np.ndarray
    hp: np.ndarray
    wait_ids: np.ndarray
    in_wait: np.ndarray
    offers: np.ndarray
    order_key: np.ndarray  # a decision point's offer keys, and the sort's spare room
    sort_ids: np.ndarray
    sort_keys: np.ndarray
    run_dev: np.ndarray
    run_deg: np.ndarray
    rec_job: np.ndarray
    rec_outcome: np.ndarray
    rec_reason: np.ndarray
    rec_deg: np.ndarray
    rec_dev: np.ndarray
    rec_jct: np.ndarray
    rec_finish: np.ndarray
    rec_shape: np.ndarray
    rec_wait: np.ndarray
    tl_time: np.ndarray
    tl_busy: np.ndarray
    log: np.ndarray  # (L, 3): the offers a screening program rejected unasked (job, jobs waiting, devices free)
    n_log: np.ndarray  # (1,): the rows of log written since it was last read


def supported(cost: CostModel, jobs: Sequence[JobSpec], program: Program) -> bool:
    """Whether the engine runs this stream: every job with its own iterations, arrivals in order, degrees it can key."""
    width = min(program.max_degree, cost.cluster.num_devices)
    if width > k.MAX_KEY_DEGREE or not jobs or (program.kind == "external" and cost.cluster.num_devices > k.MAX_KEY_DEGREE):
        return False
    arrivals = [spec.arrival_s for spec in jobs]
    return all(spec.iterations > 0 for spec in jobs) and all(a <= b for a, b in zip(arrivals, arrivals[1:], strict=False))


def run_program(
    cost: CostModel,
    jobs: Iterable[JobSpec],
    program: Program,
    queue: QueueConfig | None = None,
    decide: DecideFn | None = None,
    on_job: Callable[[], None] | None = None,
    screened: Callable[[list[Job], np.ndarray, ClusterView], None] | None = None,
) -> RunResult:
    """The run of ``program`` on ``jobs`` (sorted by arrival, each with iterations > 0: :func:`supported`) with ``queue``
    (the loss system by default): what :func:`~placer.sim.rollout.simulate` gives for the heuristic it describes, or with
    :data:`EXTERNAL` for ``decide`` (a policy's, asked at each offer with a :class:`~placer.sim.state.ClusterView` as
    the reference simulator gives it). ``on_job``: called once per job decided for good. A screening program's
    rejections (:func:`~placer.sim.engine.program.external`) reach ``screened`` (their jobs, :meth:`Stream.screened`'s
    rows, the current view) before each decision and at the end."""
    stream = Stream(cost, list(jobs), program, queue or QueueConfig())
    while stream.advance(on_job) == k.ASK:
        if decide is None:
            raise ValueError("an external program needs the policy's decide")
        view = stream.view()
        if screened is not None:
            _tell_screened(stream, screened, view)
        stream.answer(decide(stream.pending_job(), view))
    if screened is not None:
        _tell_screened(stream, screened, stream.view())
    records, timeline = stream.records(0), stream.timeline()
    return RunResult(records, timeline, compute_metrics(records, timeline, cost.cluster.num_devices))


def _tell_screened(stream: Stream, screened: Callable[[list[Job], np.ndarray, ClusterView], None], view: ClusterView) -> None:
    if len(log := stream.screened()):
        screened([stream.job(j) for j in log[:, 0].tolist()], log, view)


METRICS_FROM_ARRAYS = ("blocking_rate", "avoidable_blocking_rate")  # what :func:`program_metric` reads without records


def program_metric(cost: CostModel, jobs: Iterable[JobSpec], program: Program, queue: QueueConfig, metric: str) -> float:
    """``run_program(cost, jobs, program, queue).metrics.<metric>`` for a ``metric`` of :data:`METRICS_FROM_ARRAYS` and a
    program that decides alone (not :data:`EXTERNAL`), counted from the run's arrays: no records, timeline or metrics
    built (tuning asks for one number per run)."""
    if metric not in METRICS_FROM_ARRAYS:
        raise ValueError(f"metric {metric!r} is not read from the arrays (those: {', '.join(METRICS_FROM_ARRAYS)})")
    stream = Stream(cost, list(jobs), program, queue)
    if stream.advance() != k.DONE:
        raise ValueError("program_metric runs programs that decide alone: this one asks for decisions")
    c, n = stream.c, stream.recorded
    blocked = c.rec_outcome[:n] != k.ACCEPTED
    if metric == "blocking_rate":
        return 1 - (n - int(np.count_nonzero(blocked))) / n if n else 0.0
    servable = avoidable(c)[c.rec_job[:n]]
    count = int(np.count_nonzero(servable))
    return int(np.count_nonzero(servable & blocked)) / count if count else 0.0


class Stream:
    """One stream in the engine: its arrays, price book and compiled entry, run to the next offer the caller answers
    (:meth:`advance`), answered (:meth:`answer`) and read back (:meth:`records`, :meth:`view`)."""

    def __init__(self, cost: CostModel, specs: list[JobSpec], program: Program, queue: QueueConfig) -> None:
        n_devices = cost.cluster.num_devices
        width = min(program.max_degree, n_devices)
        self.cost, self.specs, self.queue = cost, specs, queue
        self.book = PriceBook.of(cost, width)
        self.ist, self.fst = np.zeros(k.N_STATE, dtype=np.int64), np.zeros(1)
        self.ist[k.S_PENDING], self.ist[k.N_STATE - 1], self.ist[k.S_NFREE], self.ist[k.S_NTL] = -1, n_devices, n_devices, 1
        self.c = _arrays(cost, specs, self.book, queue, width)
        self._layout = self.book.layout  # the book's arrays self.c holds
        self.w = work_arrays(n_devices, width, len(program.rules))
        self.width = width
        self.pi, self.pf = program.arrays()
        self.status = -1
        self._entry: Callable[..., int] | None = None
        self.advisers: dict[tuple[Program, ...], CompiledAdvisers] = {}  # programs answering every offer, their records
        self._jobs: dict[int, Job] = {}
        self._reported = 0
        self._screened: list[np.ndarray] = []  # log rows read when the log filled, not yet taken

    def advance(self, on_job: Callable[[], None] | None = None) -> int:
        """Run to the end (:data:`DONE`) or to an offer the caller answers (:data:`ASK`), pricing on the way; ``on_job``
        hears each job recorded meanwhile."""
        return self._run(on_job, stop_after_answer=False)

    def apply(self) -> int:
        """Carry out the answer given (:meth:`answer`) and stop (:data:`APPLIED`), pricing on the way."""
        return self._run(None, stop_after_answer=True)

    def _run(self, on_job: Callable[[], None] | None, *, stop_after_answer: bool) -> int:
        book, ist = self.book, self.ist
        ist[k.S_STOP] = int(stop_after_answer)
        while True:
            args = (ist, self.fst, self.pi, self.pf, self.synced(), self.w)
            entry = self._entry = self._entry or compiled(kernels.run, args)
            status = entry(*args)
            self.settled()
            if on_job is not None:
                for _ in range(ist[k.S_NREC] - self._reported):
                    on_job()
                self._reported = int(ist[k.S_NREC])
            if status == k.NEED:
                n = ist[k.S_NNEED]
                book.fill(self.c.need_g[:n], self.c.need_s[:n])
            elif status == k.GROW:
                book.grow()
            elif status == k.LOGGED:
                self._screened.append(self.c.log[: self.c.n_log[0]].copy())
                self.c.n_log[0] = 0
            else:
                self.status = status
                return status

    def synced(self) -> Arrays:
        """The run's arrays with the price book's (replaced when the book grew), and the book's shape count in
        ``ist``: call before a kernel that reads the book, and :meth:`settled` after it."""
        book = self.book
        self.ist[k.S_NSHAPES] = book.n_shapes
        if self._layout != book.layout:
            self.c = self.c._replace(
                rep_dev=book.rep_dev, rep_deg=book.rep_deg, price=book.price, fits=book.fits, slots=book.slots, shape_keys=book.keys
            )
            self._layout = book.layout
        return self.c

    def screened(self) -> np.ndarray:
        """(n, 3) int64: the offers a screening program (:func:`~placer.sim.engine.program.external`) rejected since the
        last call, in order: each one's job, the number of jobs waiting and of devices free when it was offered."""
        c = self.c
        rows = [*self._screened, c.log[: c.n_log[0]]]
        self._screened, c.n_log[0] = [], 0
        return np.concatenate(rows) if len(rows) > 1 else rows[0].copy()

    def settled(self) -> None:
        """Keep the shapes a kernel added in the book's count (every stream on the book numbers its shapes from it)."""
        self.book.n_shapes = int(self.ist[k.S_NSHAPES])

    def pending_job(self) -> Job:
        """The job the engine offers (after :data:`ASK`)."""
        return self.job(int(self.ist[k.S_PENDING]))

    def job(self, j: int) -> Job:
        """Job ``j`` as the reference simulator makes it on arrival."""
        found = self._jobs.get(j)
        if found is None:
            spec, c = self.specs[j], self.c
            fastest = float(c.fastest[j]) if self.queue.enabled else 0.0
            found = self._jobs[j] = Job(j, spec.graph, spec.arrival_s, spec.beta, spec.iterations, float(c.seq_jct[j]), fastest)
        return found

    def view(self) -> ClusterView:
        """The view the reference simulator gives a policy now (read-only copies of the device state)."""
        c, ist = self.c, self.ist
        free, free_at = c.free.copy(), c.free_at.copy()
        free.flags.writeable = free_at.flags.writeable = False
        waiting = tuple(map(self.job, c.wait_ids[: ist[k.S_NWAIT]].tolist()))
        running = int(ist[k.S_NRUNNING])
        return ClusterView(self.cost, self.now, free, free_at, running, waiting, self.queue, engine=EngineAdvice(self, free))

    def answer(self, decision: Decision) -> None:
        """Write the caller's decision for the pending job where
        :func:`~placer.sim.engine.answers.external_answer` reads it."""
        w = self.w
        if isinstance(decision, Place):
            if decision.resizes:
                raise ResizeError("this simulator is not elastic: jobs keep their devices (hand it a rebalance callable)")
            devices = decision.devices
            degree = len(devices)
            if degree > w.ids.shape[0] or any(not isinstance(d, int | np.integer) for d in devices):
                devices, degree = (-1,), 1  # more devices than the cluster has, or no ids: no placement either way
            w.deg[0] = degree
            w.ids[:degree] = devices
            w.pos[0, :degree] = np.arange(degree)
        elif isinstance(decision, Reject):
            w.deg[0] = -1
        else:
            raise TypeError(f"decision must be Reject or Place, got {decision!r}")
        self.ist[k.S_ANSWERED] = 1

    @property
    def now(self) -> float:
        return float(self.fst[k.F_NOW])

    @property
    def free(self) -> np.ndarray:
        return self.c.free

    @property
    def recorded(self) -> int:
        return int(self.ist[k.S_NREC])

    def records(self, start: int) -> list[JobRecord]:
        """The records from the ``start``-th on, as the reference's :class:`JobRecord` s."""
        return job_records(self.specs, self.book, self.c, start, self.recorded)

    def timeline(self) -> list[tuple[float, int]]:
        n = self.ist[k.S_NTL]
        return list(zip(self.c.tl_time[:n].tolist(), self.c.tl_busy[:n].tolist(), strict=True))


def _arrays(cost: CostModel, specs: list[JobSpec], book: PriceBook, queue: QueueConfig, width: int) -> Arrays:
    n, cluster = len(specs), cost.cluster
    rows = np.array([book.row(spec.graph) for spec in specs], dtype=np.int64)
    fastest_per_graph = {s.graph.key: book.fastest_iteration_s(s.graph) for s in specs}
    kinds, rate, memory = _device_kinds(cost)
    n_devices = cluster.num_devices
    i8, f8, b1 = np.int64, np.float64, np.bool_
    return Arrays(
        graph=rows,
        iters=np.array([float(s.iterations) for s in specs], dtype=f8),
        arrival=np.array([s.arrival_s for s in specs], dtype=f8),
        beta=np.array([s.beta for s in specs], dtype=f8),
        seq_jct=np.array([book.cost.sequential_jct_s(s.graph, s.iterations) for s in specs], dtype=f8),
        fastest=np.array([fastest_per_graph[s.graph.key] * s.iterations for s in specs], dtype=f8),
        qi=np.array([queue.capacity, _DISCIPLINES[queue.discipline], int(queue.backfill)], dtype=i8),
        free=np.ones(n_devices, dtype=b1),
        free_at=np.zeros(n_devices, dtype=f8),
        server_of=np.array(cluster.server_of, dtype=i8),  # a writable copy: one layout, one compiled signature
        dev_rate=rate,
        dev_kind=kinds,
        dev_mem=memory,
        n_mem=np.array([int(memory.max()) + 1], dtype=i8),
        slots=book.slots,
        shape_keys=book.keys,
        rep_dev=book.rep_dev,
        rep_deg=book.rep_deg,
        price=book.price,
        fits=book.fits,
        need_g=np.zeros(width * 3 + 1, dtype=i8),
        need_s=np.zeros(width * 3 + 1, dtype=i8),
        seen=np.zeros(n, dtype=b1),
        sizes=np.zeros(n, dtype=f8),
        ht=np.zeros(3 * n + 4, dtype=f8),
        hk=np.zeros(3 * n + 4, dtype=i8),
        hs=np.zeros(3 * n + 4, dtype=i8),
        hp=np.zeros(3 * n + 4, dtype=i8),
        wait_ids=np.zeros(n, dtype=i8),
        in_wait=np.zeros(n, dtype=b1),
        offers=np.zeros(n, dtype=i8),
        order_key=np.zeros(n, dtype=f8),
        sort_ids=np.zeros(n, dtype=i8),
        sort_keys=np.zeros(n, dtype=f8),
        run_dev=np.zeros((n, width), dtype=i8),
        run_deg=np.zeros(n, dtype=i8),
        rec_job=np.zeros(n, dtype=i8),
        rec_outcome=np.zeros(n, dtype=i8),
        rec_reason=np.zeros(n, dtype=i8),
        rec_deg=np.zeros(n, dtype=i8),
        rec_dev=np.zeros((n, width), dtype=i8),
        rec_jct=np.zeros(n, dtype=f8),
        rec_finish=np.zeros(n, dtype=f8),
        rec_shape=np.zeros(n, dtype=i8),
        rec_wait=np.zeros(n, dtype=f8),
        tl_time=np.zeros(3 * n + 4, dtype=f8),
        tl_busy=np.zeros(3 * n + 4, dtype=i8),
        log=np.zeros((max(n, 64), 3), dtype=i8),
        n_log=np.zeros(1, dtype=i8),
    )


def _device_kinds(cost: CostModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each device's kind (its speed, model and compute scale: what a shape takes from its slowest device), its
    sustained rate (speed x compute_scale, the cost model's) and the rank of its memory among the cluster's."""
    cluster = cost.cluster
    kinds = list(zip(cluster.speed.tolist(), cluster.device_model, cluster.compute_scale, strict=True))
    kind_ids = {kind: i for i, kind in enumerate(dict.fromkeys(kinds))}
    memory = cluster.memory_bytes.tolist()
    ranks = {m: i for i, m in enumerate(sorted(set(memory)))}
    rate = np.array([s * scale for s, _, scale in kinds], dtype=np.float64)
    return np.array([kind_ids[kind] for kind in kinds], dtype=np.int64), rate, np.array([ranks[m] for m in memory], dtype=np.int64)


def warm_up() -> None:
    """Compile the engine (or load it from numba's cache beside the package) on a two-job stream: a heuristic's program
    and a caller's decisions, whose kernels share one signature. A fresh install's first call compiles (about 30 s on 2 cores)."""
    spec = {
        "name": "warm-up", "device_types": {"gpu": {"memory_bytes": 1e10, "speed": 1.0}},
        "servers": [{"count": 1, "devices_per_server": 2, "device_type": "gpu"}],
        "links": {"intra_server": {"bandwidth_Bps": 1e10, "latency_s": 0.0}, "inter_server": {"bandwidth_Bps": 1e9, "latency_s": 0.0}},
    }  # fmt: skip
    cost = CostModel(Cluster(parse_cluster_spec(spec)), strategy="sipml")
    graph = nx.DiGraph()
    graph.add_node("op", name="op", compute_s=1.0, param_bytes=0.0, activation_bytes=0.0, **{"pass": "forward"})
    jobs = [JobSpec(float(t), JobGraph(graph, name="warm-up", iterations=1), 1.0, 1) for t in range(2)]
    run_program(cost, jobs, Program("lean", ("first_fit",), 2))
    run_program(cost, jobs, external(2), decide=lambda job, view: Reject())
