"""The cost model: how long an iteration of a job takes on a placement, and whether it fits.

For a placement of ``d`` devices, strategy ``auto`` tries every factorisation
``dp x tp x pp = d`` (:mod:`placer.cost.data_parallel`, :mod:`placer.cost.tensor_parallel`,
:mod:`placer.cost.pipeline`) whose tensor-parallel groups sit inside servers, and picks the
fastest that fits in memory (ties to fewer tensor, then pipeline, ranks); ``dp``, ``tp`` and
``pp`` force the pure strategy; ``sipml`` is PAC-ML's op splitting (:mod:`placer.cost.sipml`).

Ranks are laid out tensor-parallel innermost, then data-parallel, then pipeline outermost
(Megatron's order), over the placement's servers from the fullest down. One iteration of a
hybrid job, with ``m`` micro-batches per replica (1 without pipelining, else ``4 pp`` capped
at the replica's samples, or the model's ``micro_batches``)::

    T = max(T_pp + max_j exposed_dp_j + [d > 1] sync_s, data_s / dp) + iteration_s

where ``T_pp`` is the 1F1B time of the stages' per-micro-batch forward and backward times
(compute ``/ dp``, split ops ``/ tp``, tensor-parallel all-reduces, stage-to-stage sends),
``exposed_dp_j`` the gradient all-reduce of stage ``j``'s data-parallel group that the last
micro-batch's backward does not hide, ``data_s`` the host data loading, and ``sync_s`` and
``iteration_s`` the cluster's fixed overheads (its ``[overheads]``, plus the job's own
``iteration_s`` under ``[jobs.NAME]``; 0 unless calibrated). Matmul-class op times are divided
by the slowest device's ``compute_scale``, all GPU times by the job's. Memory per device
is the heaviest stage's optimizer state (``param_state_factor`` x fp32 parameter bytes, ``/ tp``
where split) plus its stashed activations. ``comm_s`` of a prediction is ``T`` minus the same
formula with every transfer free.

Results depend on a placement only through its :class:`PlacementShape`, so they are cached
exactly per (graph, shape, strategy).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from placer.cluster.topology import Cluster, JobCalibration, Overheads
from placer.common.errors import CostModelError
from placer.common.lru import LRUCache
from placer.cost import sipml
from placer.cost.collectives import Fabric, allreduce_s, p2p_s
from placer.cost.data_parallel import bucket_order_exposed_s, even_buckets_exposed_s
from placer.cost.prediction import Prediction, Strategy
from placer.cost.profile import GraphProfile
from placer.cost.shape import PlacementShape
from placer.cost.shared import shared_placements, shared_predictions
from placer.cost.stages import Stages, factorisations, one_f_one_b, tp_inside_servers
from placer.cost.tables import PlacementEntry, Placements, PlacementTable
from placer.graphs.job_graph import JobGraph

STRATEGIES = ("auto", "dp", "tp", "pp", "sipml")


class CostModel:
    """Iteration time, memory and the chosen strategy of jobs on one cluster, with caches.

    ``strategy``: one of :data:`STRATEGIES` (``auto`` by default). ``param_state_factor``:
    optimizer state bytes per fp32 parameter byte (4: weights, gradients, two Adam moments =
    16 bytes per parameter). ``micro_batches`` and ``recompute``: pipeline settings
    (:mod:`placer.cost.pipeline`). ``cache=False`` recomputes every time (benchmarks).
    Caches are LRU-bounded: ``max_graphs`` graphs' profiles and ``max_predictions`` predictions
    (shared by every model of one :attr:`pricing_key`: :mod:`placer.cost.shared`),
    so a long-running service's memory stays flat however many distinct graphs it sees; with
    ``max_graph_bytes`` the per-graph caches are also bounded by their size (estimated at
    :data:`BYTES_PER_COMPILED_ELEMENT` per op or edge), so a few huge graphs cannot hold memory
    that many small ones would not.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        strategy: str = "auto",
        param_state_factor: float = 4.0,
        micro_batches: int | None = None,
        recompute: bool = False,
        cache: bool = True,
        max_graphs: int = 512,
        max_predictions: int = 200_000,
        max_graph_bytes: float | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise CostModelError(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})")
        self.strategy = strategy
        self.param_state_factor = param_state_factor
        self.micro_batches = micro_batches
        self.recompute = recompute
        self.cache = cache
        by_bytes = max_graph_bytes or None
        self._compiled: LRUCache[str, sipml.CompiledGraph] = LRUCache(
            max_graphs, max_bytes=by_bytes, sizeof=_compiled_bytes if by_bytes else None
        )
        self._profiles: LRUCache[tuple, GraphProfile] = LRUCache(
            4 * max_graphs, max_bytes=by_bytes, sizeof=_profile_bytes if by_bytes else None
        )  # a few device types per graph
        self._stage_cache: LRUCache[tuple, Stages] = LRUCache(16 * max_graphs)
        self._bind(cluster, max_predictions, max_graphs)

    def _bind(self, cluster: Cluster, max_predictions: int, max_graphs: int) -> CostModel:
        """Set what depends on the cluster's constants (the graph-side caches above do not), with empty caches but the
        predictions, which every model of one :attr:`pricing_key` shares (:func:`~placer.cost.shared.shared_predictions`); self."""
        self.cluster = cluster
        self.fabric = Fabric.of(cluster)
        self.overheads = cluster.spec.overheads
        self.jobs = cluster.spec.jobs
        self._speed = cluster.speed.tolist()  # plain lists: placements are small, numpy calls are not free
        self._rate = [v * c for v, c in zip(self._speed, cluster.compute_scale, strict=True)]
        self._predictions = shared_predictions(self.pricing_key, max_predictions) if self.cache else LRUCache(max_predictions)
        self._sequential: LRUCache[str, float] = LRUCache(max_graphs)
        placements = partial(Placements, cluster, self._rate, self._speed, cluster.memory_bytes.tolist(), max_graphs)
        self._placed = shared_placements(self.pricing_key, max_graphs, placements) if self.cache else placements()
        self._by_shape: LRUCache[str, dict[PlacementShape, Prediction]] = LRUCache(max_graphs)  # graph key -> shape -> prediction
        return self

    # -- placements -------------------------------------------------------------------
    def shape(self, devices: tuple[int, ...] | list[int] | np.ndarray) -> PlacementShape:
        """The placement's :class:`PlacementShape` (memoised per device tuple: placements recur; equal shapes of
        different device tuples are one object, so a table's distinct shapes are found by identity)."""
        return self._placed.shape(tuple(devices.tolist()) if isinstance(devices, np.ndarray) else tuple(devices))

    def slowest(self, devices: Sequence[int]) -> int:
        """The placed device with the lowest sustained rate (speed x compute_scale): it paces the job."""
        return self._placed.slowest(devices)

    def placements(self, free: np.ndarray, degrees: Sequence[int], rules: Sequence[str]) -> tuple[PlacementEntry, ...]:
        """Every (degree, rule) placement on the free devices ``free`` ((N,) bool), degree-major.

        Memoised per free-device mask: every job offered at one decision point (a queue) sees the
        same mask, and occupancies recur. An entry's ``devices`` and ``shape`` are None when fewer
        than ``degree`` devices are free; ``repeat`` marks a rule that gave the same devices as an
        earlier rule at that degree.
        """
        return self._placed.entries(free, tuple(degrees), tuple(rules))

    def placement_table(self, free: np.ndarray, degrees: Sequence[int], rules: Sequence[str]) -> PlacementTable:
        """:meth:`placements` without the devices, as every mask with the same free devices per server shares it
        (:mod:`placer.cost.tables`): its shapes, and each graph's predictions on them once asked for."""
        return self._placed.table(free, tuple(degrees), tuple(rules))

    def table_predictions(self, graph: JobGraph, table: PlacementTable) -> tuple[Prediction, ...]:
        """:meth:`predict` of ``graph`` on each of ``table.shapes``, in order (kept in the table)."""
        predicted = table.predicted.get(graph.key)
        if predicted is None:
            if not self.cache:
                return tuple([self.predict(graph, shape) for shape in table.shapes])
            known = self._by_shape.get(graph.key)
            if known is None:
                known = self._by_shape[graph.key] = {}
            out = []
            for shape in table.shapes:
                prediction = known.get(shape)
                if prediction is None:
                    prediction = known[shape] = self.predict(graph, shape)
                out.append(prediction)
            predicted = table.predicted[graph.key] = tuple(out)
        return predicted

    def best_iteration_s(self, graph: JobGraph, free: np.ndarray, degrees: Sequence[int], rules: Sequence[str]) -> float:
        """The least seconds per iteration of ``graph`` over :meth:`placements` ``(free, degrees, rules)`` that fit in
        memory (inf when none does), memoised per graph and table: whether a waiting job has any option that meets its
        deadline is one lookup, not a table of predictions."""
        table = self._placed.table(free, tuple(degrees), tuple(rules))
        best = table.best.get(graph.key)
        if best is None:
            best = min((p.iteration_s for p in self.table_predictions(graph, table) if p.fits), default=math.inf)
            if self.cache:
                table.best[graph.key] = best
        return best

    # -- predictions ------------------------------------------------------------------
    def predict(self, graph: JobGraph, placement, strategy: str | None = None) -> Prediction:
        """Prediction for ``graph`` on ``placement`` (device ids or a :class:`PlacementShape`)."""
        shape = placement if isinstance(placement, PlacementShape) else self.shape(placement)
        mode = strategy or self.strategy
        if mode not in STRATEGIES:
            raise CostModelError(f"unknown strategy {mode!r} (choose from {', '.join(STRATEGIES)})")
        key = (graph.key, shape, mode)
        cached = self._predictions.get(key)
        if cached is None:
            cached = self._predict_sipml(graph, shape) if mode == "sipml" else self._predict_parallel(graph, shape, mode)
            if self.cache:
                self._predictions[key] = cached
        return cached

    def predict_split(self, graph: JobGraph, shape: PlacementShape, split: Strategy) -> Prediction:
        """Prediction for one ``dp x tp x pp`` split, uncached (calibration re-evaluates it often)."""
        profile = self.profile(graph, shape.device, shape.speed)
        server_of = [s for s, count in enumerate(shape.counts) for _ in range(count)]
        return self._hybrid(profile, shape, server_of, split.dp, split.tp, split.pp, self._job(graph))

    def _job(self, graph: JobGraph) -> JobCalibration | None:
        """The job's own corrections: those of its content key (what the service fits) else of its name (a cluster file's)."""
        return (self.jobs.get(graph.key) or self.jobs.get(graph.name)) if self.jobs else None

    @property
    def pricing_key(self) -> tuple:
        """Everything a prediction reads besides the graph and the shape: two cost models with equal keys predict alike
        (the compiled engine's price book is kept by it, so the runs of one cluster share their prices)."""
        cluster = self.cluster
        arrays = (cluster.speed.tobytes(), cluster.memory_bytes.tobytes(), tuple(cluster.compute_scale), tuple(cluster.device_model))
        jobs = tuple(sorted((name, repr(job)) for name, job in self.jobs.items())) if self.jobs else ()
        settings = (self.strategy, self.param_state_factor, self.micro_batches, self.recompute)
        return (cluster.spec.model_dump_json(), arrays, repr(self.fabric), repr(self.overheads), jobs, settings)

    def retuned(self, fabric: Fabric, overheads: Overheads, jobs: dict[str, JobCalibration]) -> CostModel:
        """This model with other links, overheads and per-job corrections; graph-side caches are shared, predictions are not."""
        twin = copy.copy(self)
        twin.fabric, twin.overheads, twin.jobs = fabric, overheads, jobs
        twin._predictions, twin._by_shape = LRUCache(self._predictions.maxsize), LRUCache(self._by_shape.maxsize)
        twin._placed = copy.copy(self._placed)  # the shapes shared, the tables (which hold predictions) not
        twin._placed.clear_tables()
        return twin

    def rebased(self, cluster: Cluster) -> CostModel:
        """This model on ``cluster`` (other constants, same devices): graph-side caches are shared, predictions are not."""
        return copy.copy(self)._bind(cluster, self._predictions.maxsize, self._sequential.maxsize)

    def priced(self) -> tuple[tuple, list, list]:
        """Settings, predictions and sequential times (picklable), for :meth:`adopt` by a model in another process."""
        settings = (self.strategy, self.param_state_factor, self.micro_batches, self.recompute)
        return settings, self._predictions.items(), self._sequential.items()

    def adopt(self, priced: tuple[tuple, list, list]) -> bool:
        """Take :meth:`priced`'s results of a model on an equal cluster with the same settings (False: other settings, ignored)."""
        if priced[0] != (self.strategy, self.param_state_factor, self.micro_batches, self.recompute) or not self.cache:
            return False
        self._predictions.update(priced[1])
        self._sequential.update(priced[2])
        return True

    def iteration_s(self, graph: JobGraph, shape: PlacementShape) -> float:
        """Seconds per training iteration of ``graph`` placed with ``shape``."""
        return self.predict(graph, shape).iteration_s

    def jct_s(self, graph: JobGraph, devices, iterations: int | None = None) -> float:
        """Job completion time in seconds of ``graph`` on ``devices``."""
        return self.predict(graph, devices).iteration_s * (iterations or graph.iterations)

    def fits(self, graph: JobGraph, devices) -> bool:
        return self.predict(graph, devices).fits

    def sequential_jct_s(self, graph: JobGraph, iterations: int | None = None) -> float:
        """JCT on one device of the cluster's fastest type for ``graph`` (memory not checked)."""
        return self.sequential_iteration_s(graph) * (iterations or graph.iterations)

    def sequential_iteration_s(self, graph: JobGraph) -> float:
        if self.strategy == "sipml":
            return self.compile(graph).sequential_iteration_s
        seq = self._sequential.get(graph.key)
        if seq is None:
            seq = min(self.predict(graph, self._single(*kind), "dp").iteration_s for kind in self._device_kinds())
            self._sequential[graph.key] = seq
        return seq

    def memory_per_device(self, graph: JobGraph, degree: int) -> float:
        """Bytes per device if the job's single-device footprint split evenly ``degree`` ways (a lower bound)."""
        return self.compile(graph).state_bytes / degree

    def min_degree_to_fit(self, graph: JobGraph, memory_bytes: float) -> int:
        """Smallest degree whose even share fits in ``memory_bytes`` (a lower bound)."""
        return max(1, int(np.ceil(self.compile(graph).state_bytes / memory_bytes - 1e-12)))

    def compile(self, graph: JobGraph) -> sipml.CompiledGraph:
        compiled = self._compiled.get(graph.key)
        if compiled is None:
            compiled = sipml.CompiledGraph.build(graph, self.param_state_factor)
            self._compiled[graph.key] = compiled
        return compiled

    def profile(self, graph: JobGraph, device: str | None, speed: float) -> GraphProfile:
        key = (graph.key, device, speed)
        profile = self._profiles.get(key)
        if profile is None:
            profile = GraphProfile.build(graph, device, speed, key)
            self._profiles[key] = profile
        return profile

    # -- internals --------------------------------------------------------------------
    def _device_kinds(self) -> list[tuple[str | None, float, float]]:
        kinds = zip(self.cluster.device_model, self._speed, self.cluster.compute_scale, strict=True)
        return sorted(set(kinds), key=str)

    def _single(self, model: str | None, speed: float, compute_scale: float = 1.0) -> PlacementShape:
        return PlacementShape(1, 1, 1, 1, speed, (1,), model, math.inf, compute_scale)

    def _predict_sipml(self, graph: JobGraph, shape: PlacementShape) -> Prediction:
        compiled = self.compile(graph)
        t = sipml.iteration_s(compiled, shape, self.cluster.spec.links)
        compute = compiled.sequential_iteration_s / (shape.degree * shape.speed)
        memory = compiled.state_bytes / shape.degree
        return Prediction(t, Strategy(dp=shape.degree, sipml=True), memory, shape.memory_bytes, max(0.0, t - compute), 0.0)

    def _predict_parallel(self, graph: JobGraph, shape: PlacementShape, mode: str) -> Prediction:
        profile = self.profile(graph, shape.device, shape.speed)
        server_of = [s for s, count in enumerate(shape.counts) for _ in range(count)]
        job = self._job(graph)
        candidates = [
            self._hybrid(profile, shape, server_of, dp, tp, pp, job)
            for dp, tp, pp in factorisations(shape.degree, mode)
            if tp_inside_servers(server_of, tp) and pp <= profile.num_ops and (profile.batch_size is None or dp <= profile.batch_size)
        ]
        fitting = [c for c in candidates if c.fits]
        pool = fitting or candidates
        if not pool:
            return Prediction(math.inf, None, math.inf, shape.memory_bytes, 0.0, profile.data_s)
        return min(pool, key=_fastest_then_least_split)

    def _hybrid(
        self, profile: GraphProfile, shape: PlacementShape, server_of: list[int], dp: int, tp: int, pp: int, job=None
    ) -> Prediction:
        """One factorisation's prediction (module docstring). Plain floats: stage lists are short."""
        fabric = self.fabric
        m = 1
        if pp > 1:
            m = self.micro_batches or 4 * pp
            if profile.batch_size is not None:
                m = max(1, min(m, profile.batch_size // dp))
        st = self._stages(profile, tp, pp)
        scale = 1.0 / (dp * m)
        recompute = self.recompute and pp > 1
        if tp > 1:
            ar_fixed = allreduce_s(0.0, (tp,), fabric)
            ar_per_byte = allreduce_s(1.0, (tp,), fabric) - ar_fixed
            tp_comm = [n * ar_fixed + size * scale * ar_per_byte for n, size in zip(st.allreduces, st.allreduce_bytes, strict=True)]
        else:
            tp_comm = [0.0] * pp
        slower = 1.0 / shape.compute_scale - 1.0  # matmul-class time grows by this fraction
        gpu_scale = scale / job.compute_scale if job is not None else scale
        F = [(x + slower * mm) * gpu_scale for x, mm in zip(st.forward_s, st.forward_matmul_s, strict=True)]
        B = [
            (x + slower * mm) * gpu_scale + (fwd if recompute else 0.0)
            for x, mm, fwd in zip(st.backward_s, st.backward_matmul_s, F, strict=True)
        ]
        f = [x + c for x, c in zip(F, tp_comm, strict=True)]
        b = [x + c for x, c in zip(B, tp_comm, strict=True)]
        for j in range(pp - 1):
            same = all(server_of[tp * (k + dp * j)] == server_of[tp * (k + dp * (j + 1))] for k in range(dp))
            send = p2p_s(st.cut_out_bytes[j] * scale, same, fabric)
            f[j] += send
            b[j + 1] += send
        memory = 0.0
        for j in range(pp):
            if recompute:
                stash = st.activation_bytes[j] * scale + st.cut_in_bytes[j] / dp
            else:
                stash = st.activation_bytes[j] / dp * min(m, pp - j) / m
            memory = max(memory, self.param_state_factor * st.param_bytes[j] + stash)
        t_pipe, t_free = one_f_one_b(f, b, m), one_f_one_b(F, B, m)
        if dp > 1:
            exposed = 0.0
            for j in range(pp):
                per_server: dict[int, int] = {}
                for k in range(dp):
                    server = server_of[tp * (k + dp * j)]
                    per_server[server] = per_server.get(server, 0) + 1
                counts = tuple(per_server.values())
                if fabric.detailed:
                    fixed = allreduce_s(0.0, counts, fabric, concurrent=tp)
                    per_byte = allreduce_s(1.0, counts, fabric, concurrent=tp) - fixed
                    exposed = max(exposed, bucket_order_exposed_s(b[j], st.buckets[j], fixed, per_byte, fabric.overlap))
                else:  # as before the bucket-order terms (a cluster file that does not opt in: bit for bit)
                    grads = st.param_bytes[j] * profile.grad_bytes_per_param_byte
                    sync = even_buckets_exposed_s(b[j], grads, lambda size, c=counts: allreduce_s(size, c, fabric, concurrent=tp))
                    exposed = max(exposed, sync)
            t_pipe += exposed
        if dp * tp * pp > 1:
            t_pipe += self.overheads.sync_s
        data = profile.data_s / dp
        fixed = self.overheads.iteration_s + (job.iteration_s if job is not None else 0.0)
        t, t_free = max(t_pipe, data) + fixed, max(t_free, data) + fixed
        return Prediction(t, Strategy(dp, tp, pp), memory, shape.memory_bytes, t - t_free, data, m)

    def _stages(self, profile: GraphProfile, tp: int, pp: int) -> Stages:
        """Per-stage sums of one replica's whole batch (``dp`` only scales them), cached per (profile, tp, pp)."""
        key = (profile.key, tp, pp)
        stages = self._stage_cache.get(key)
        if stages is None:
            stages = Stages.build(profile, tp, pp)
            self._stage_cache[key] = stages
        return stages


BYTES_PER_COMPILED_ELEMENT = 100  # per op or edge of a compiled graph, per op of a profile (measured 86: benchmarks/bench_service.py)


def _fastest_then_least_split(prediction: Prediction) -> tuple[float, int, int]:
    """Order of a hybrid's candidates: the fastest, then the least tensor and pipeline parallelism."""
    assert prediction.strategy is not None  # _hybrid's predictions always carry their strategy
    return prediction.iteration_s, prediction.strategy.tp, prediction.strategy.pp


def _compiled_bytes(compiled: sipml.CompiledGraph) -> float:
    return (compiled.compute_s.size + compiled.tensor_bytes.size) * BYTES_PER_COMPILED_ELEMENT


def _profile_bytes(profile: GraphProfile) -> float:
    return 2 * profile.fw_s.size * BYTES_PER_COMPILED_ELEMENT
