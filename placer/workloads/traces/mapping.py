"""The one mapping from a trace's jobs to replayable rows, shared by every importer (rules in docs/traces.md).

- **Which jobs**: a job is kept when it names the chosen virtual cluster (``--vc``), ended ``completed`` or
  ``killed`` (:data:`~placer.workloads.traces.core.KEPT_STATUSES`), asked for GPUs, ran for some time and
  was submitted at or after ``--start``; the first ``--jobs`` of them in submission order. Every other
  row is counted under the first reason it fails, in that order.
- **Arrivals**: seconds from the origin, ``--start`` or else the midnight on or before the first kept
  job (:func:`origin_s`), so the trace's daily cycle reaches the simulator at its time of day.
- **Work**: a job's GPU-seconds (GPUs x run time), moved to the cluster's fastest device by the ratio of
  sustained 16-bit matmul rates (fp32 where a device has none) when the trace names its GPU model
  (:func:`speed_ratio`); as they are otherwise.
- **Graph**: a job whose name is a model of :data:`MODEL_GRAPHS` runs that graph (``by name``); the others
  split over ``--graphs`` by work, the graphs sorted by sequential iteration time taking equal quantiles
  of the jobs' work (``by GPU time``: bigger jobs, bigger graphs; :func:`size_buckets`, Philly's rule).
- **Iterations**: work / the graph's sequential iteration time on the cluster, at least 1 (the sequential
  JCT is the job's work).
- **Deadline**: :class:`DeadlineRule`, beta drawn from one named distribution with one seed, a draw per
  job in arrival order (as Gavel's importer draws in file order).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from placer.cluster.devices import DEVICE_MODELS
from placer.common.errors import WorkloadError
from placer.graphs.catalog import resolve_graph
from placer.graphs.job_graph import JobGraph
from placer.workloads.generator import BetaDistribution
from placer.workloads.traces.core import DAY_S, KEPT_STATUSES, ImportReport, Parsed, TraceJob, TraceRow

# A job's name (lower case) -> the shipped graph it runs. Pollux/Sia applications (their models: ResNet-18 on
# CIFAR-10, ResNet-50 on ImageNet, NCF, BERT, DeepSpeech2, YOLOv3), PAI's workload tags and Acme's LLM job
# types. No speech model or detector ships: DeepSpeech2 runs GNMT (recurrent layers), YOLOv3 ResNet-101 (a
# convolutional backbone of similar depth).
MODEL_GRAPHS = {
    "cifar10": "gavel_resnet18",
    "imagenet": "resnet50",
    "ncf": "gavel_recommendation",
    "bert": "bert_base",
    "deepspeech2": "gnmt",
    "yolov3": "resnet101",
    "resnet": "resnet50",
    "inception": "inception_v3",
    "vgg": "vgg16",
    "nmt": "gnmt",
    "ctr": "gavel_recommendation",
    "pretrain": "llama_850m",
    "sft": "gpt2_medium",
}
# A trace's GPU type -> placer's device model. PAI's MISC is "older generations, e.g. K40m, K80, M60": a K80.
# openb's G1-G3 are undisclosed: unknown types count as the cluster's own device.
DEVICE_OF_GPU_TYPE = {
    "V100": "V100-16GB",
    "V100M16": "V100-16GB",
    "V100M32": "V100-32GB",
    "P100": "P100",
    "P40": "P40",
    "T4": "T4",
    "K80": "K80",
    "MISC": "K80",
    "A10": "A10",
    "A100": "A100-80GB",
    "H100": "H100-SXM",
    "L4": "L4",
}
BY_NAME, BY_WORK = "by name", "by GPU time"


def draw_betas(beta_dist: BetaDistribution, rng: np.random.Generator, n: int) -> list[float]:
    """``n`` deadlines, one draw at a time (the order Gavel's importer has always drawn in)."""
    return [float(beta_dist.sample(rng, 1)[0]) for _ in range(n)]


@dataclass(frozen=True)
class DeadlineRule:
    """The deadline rule of every importer: beta from ``beta_dist``, drawn per job in arrival order with ``seed``."""

    beta_dist: BetaDistribution = BetaDistribution("C")
    seed: int = 0

    def draw(self, n: int) -> list[float]:
        return draw_betas(self.beta_dist, np.random.default_rng(self.seed), n)


def device_rate(model: str) -> float:
    """Sustained 16-bit matmul FLOP/s of a device model (fp32 where it has no 16-bit tensor rate)."""
    return DEVICE_MODELS[model].matmul_rate("fp16")


def fastest_device(models: Iterable[str | None]) -> str | None:
    """The device model with the highest :func:`device_rate` among ``models`` (None where none is named)."""
    named = {m for m in models if m}
    return max(sorted(named), key=device_rate, default=None)


def speed_ratio(gpu_type: str | None, reference: str | None) -> float:
    """How fast the trace's GPU type runs relative to ``reference`` (1 where either is unknown)."""
    model = DEVICE_OF_GPU_TYPE.get((gpu_type or "").upper())
    if model is None or reference is None:
        return 1.0
    return device_rate(model) / device_rate(reference)


def size_buckets(graphs: Sequence[JobGraph], sequential_iteration_s: Callable[[JobGraph], float], work: Sequence[float]) -> list[JobGraph]:
    """The graph of each job by its work: ``graphs`` sorted by sequential iteration time take equal quantiles of ``work``."""
    by_size = sorted(graphs, key=sequential_iteration_s)
    edges: np.ndarray | list[float]
    edges = np.quantile(work, np.linspace(0, 1, len(by_size) + 1)[1:-1]) if len(by_size) > 1 and len(work) else []
    return [by_size[int(np.searchsorted(edges, w, side="right"))] for w in work]


def iterations_for(work_s: float, iteration_s: float) -> int:
    """Iterations whose sequential time is ``work_s`` (at least 1)."""
    return max(1, round(work_s / iteration_s))


@dataclass(frozen=True)
class GraphMapping:
    """Jobs to graphs and iterations on one cluster: ``graphs`` are the GPU-time buckets, ``sequential_iteration_s``
    the cluster's seconds per iteration, ``reference_device`` its fastest device model (work moves to it),
    ``by_name`` whether :data:`MODEL_GRAPHS` applies, ``resolve`` how a named graph loads."""

    graphs: tuple[JobGraph, ...]
    sequential_iteration_s: Callable[[JobGraph], float]
    reference_device: str | None = None
    by_name: bool = True
    resolve: Callable[[str], JobGraph] = resolve_graph

    def __post_init__(self) -> None:
        if not self.graphs:
            raise WorkloadError("the trace mapping needs at least one graph (--graphs)")

    def work_s(self, job: TraceJob) -> float:
        """The job's GPU-seconds on the reference device."""
        return job.gpu_s * speed_ratio(job.gpu_type, self.reference_device)

    def named(self, job: TraceJob) -> str | None:
        return MODEL_GRAPHS.get((job.name or "").lower()) if self.by_name else None

    def assign(self, jobs: Sequence[TraceJob]) -> list[tuple[JobGraph, int, str]]:
        """(graph, iterations, rule) of each job."""
        loaded: dict[str, JobGraph] = {}
        names = [self.named(j) for j in jobs]
        for model in {n for n in names if n}:
            loaded[model] = self.resolve(model)
        unnamed = [i for i, n in enumerate(names) if n is None]
        buckets = size_buckets(self.graphs, self.sequential_iteration_s, [self.work_s(jobs[i]) for i in unnamed])
        bucketed = dict(zip(unnamed, buckets, strict=True))
        out = []
        for i, (job, name) in enumerate(zip(jobs, names, strict=True)):
            graph = loaded[name] if name else bucketed[i]
            iterations = iterations_for(self.work_s(job), self.sequential_iteration_s(graph))
            out.append((graph, iterations, BY_NAME if name else BY_WORK))
        return out


def drop_reason(job: TraceJob, vc: str | None, start_s: float | None) -> str | None:
    """Why a job is not replayed (the first reason, in the module's order), or None."""
    if vc is not None and job.vc != vc:
        return "other vc"
    if job.status not in KEPT_STATUSES:
        return job.status
    if not job.gpus > 0:
        return "cpu-only"
    if not job.duration_s > 0:
        return "no run time"
    if start_s is not None and job.submit_s < start_s:
        return "before --start"
    return None


def origin_s(first_submit_s: float, start_s: float | None) -> float:
    """Where arrival 0 stands: ``start_s``, else the midnight on or before the first job."""
    return start_s if start_s is not None else math.floor(first_submit_s / DAY_S) * DAY_S


def convert(
    parsed: Parsed,
    kind: str,
    mapping: GraphMapping,
    rule: DeadlineRule,
    *,
    start_s: float | None = None,
    jobs: int | None = None,
    vc: str | None = None,
) -> tuple[list[TraceRow], ImportReport]:
    """Replay rows of the jobs kept from ``parsed`` (sorted by arrival) and the report of what was kept, mapped, dropped."""
    dropped = Counter(parsed.dropped)
    kept = []
    for job in parsed.jobs:
        reason = drop_reason(job, vc, start_s)
        if reason is None:
            kept.append(job)
        else:
            dropped[reason] += 1
    kept.sort(key=lambda j: j.submit_s)
    if jobs is not None and len(kept) > jobs:
        dropped["after --jobs"] += len(kept) - jobs
        kept = kept[:jobs]
    if not kept:
        why = ", ".join(f"{n} {reason}" for reason, n in dropped.most_common()) or "the trace has no rows"
        raise WorkloadError(f"no jobs kept from the {kind} trace ({why})")
    origin = origin_s(kept[0].submit_s, start_s)
    assigned = mapping.assign(kept)
    betas = rule.draw(len(kept))
    rows = [
        TraceRow(job.submit_s - origin, graph.name, beta, iterations)
        for job, (graph, iterations, _), beta in zip(kept, assigned, betas, strict=True)
    ]
    mapped = Counter((graph.name, how) for graph, _, how in assigned)
    report = ImportReport(kind, parsed.rows, len(rows), dict(dropped.most_common()), dict(mapped.most_common()), origin)
    return rows, report
