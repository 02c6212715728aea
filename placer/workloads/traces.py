"""Public GPU-cluster traces converted to placer's replay format (``arrival_s,graph,beta,iterations``).

    placer import trace gavel data/traces/gavel_msr_0e4a51.trace --out runs/gavel.csv --beta-dist C
    placer import trace philly data/traces/philly_pollux.csv --out runs/philly.csv --vc 6214e9 --jobs 500

Rules (neither trace carries placer's graphs or deadlines, so each says how it stands in):

- **Gavel** (MSR-derived): each job's model maps to a shipped graph (:data:`GAVEL_GRAPHS`: the
  networks Gavel's job types run, imported from PyTorch by :mod:`placer.graphs.gavel_models`; ResNet-50 is
  PipeDream's ImageNet profile), rescaled to the job's batch size
  (``graph@batch``); iterations = the trace's total steps; arrival = its arrival time. The trace
  has no deadlines: beta is drawn per job from ``beta_dist`` with the given seed.
- **Philly** (Pollux's processed trace): jobs of one virtual cluster (``vc``, optional) from the
  first ``start`` on, ``jobs`` of them. Each job's GPU time picks a graph by bucket: the shipped
  graphs sorted by sequential iteration time split the jobs' GPU-time quantiles evenly (bigger jobs,
  bigger graphs); iterations make the sequential JCT equal the trace's GPU time (at least 1); the
  deadline is the observed duration: beta = clip(duration / GPU time, 0.05, 1) (a job that ran on
  n GPUs for the whole time gets 1/n).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text
from placer.graphs.job_graph import JobGraph
from placer.workloads.generator import BetaDistribution

GAVEL_GRAPHS = {
    "ResNet-18": "gavel_resnet18",  # CIFAR-10
    "ResNet-50": "resnet50",  # ImageNet (PipeDream's profile)
    "Transformer": "gavel_transformer",  # Multi30k translation
    "LM": "gavel_lm",  # WikiText-2 LSTM
    "Recommendation": "gavel_recommendation",  # MovieLens-20M autoencoder
    "CycleGAN": "gavel_cyclegan",
    "A3C": "gavel_a3c",  # Atari Pong
}
_GAVEL_TYPE = re.compile(r"^(?P<model>[^()]+?)\s*(\(batch size (?P<batch>\d+)\))?$")
BETA_FLOOR = 0.05


@dataclass(frozen=True)
class TraceRow:
    arrival_s: float
    graph: str  # a shipped graph name, or NAME@BATCH
    beta: float
    iterations: int


def convert_gavel(path: str | Path, beta_dist: BetaDistribution, rng: np.random.Generator) -> list[TraceRow]:
    rows = []
    for line_no, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise WorkloadError(f"{path}:{line_no}: expected 7 tab-separated fields, got {len(fields)}")
        m = _GAVEL_TYPE.match(fields[0].strip())
        if not m or m["model"] not in GAVEL_GRAPHS:
            raise WorkloadError(f"{path}:{line_no}: unknown job type {fields[0]!r} (known models: {', '.join(GAVEL_GRAPHS)})")
        try:
            steps, arrival = int(fields[4]), float(fields[5])
        except ValueError:
            raise WorkloadError(f"{path}:{line_no}: total_steps and arrival_time must be numbers") from None
        graph = GAVEL_GRAPHS[m["model"]] + (f"@{m['batch']}" if m["batch"] else "")
        rows.append(TraceRow(arrival, graph, float(beta_dist.sample(rng, 1)[0]), max(1, steps)))
    return _sorted(rows, path)


def convert_philly(
    path: str | Path,
    graphs: Sequence[JobGraph],
    sequential_iteration_s: Callable[[JobGraph], float],
    *,
    vc: str | None = None,
    start: str | None = None,
    jobs: int | None = None,
) -> list[TraceRow]:
    records = []
    reader = csv.DictReader(_read(path).splitlines())
    try:
        rows = list(reader)
    except csv.Error as exc:  # a field over the csv module's 128 KiB limit
        raise WorkloadError(f"{path}:{reader.line_num}: {exc}") from None
    for line_no, row in enumerate(rows, start=2):
        try:
            stamp = datetime.fromisoformat(row["timestamp"])
            duration, gpu_time = float(row["duration"]), float(row["gpu_time"])
        except (KeyError, TypeError, ValueError):
            raise WorkloadError(f"{path}:{line_no}: need timestamp, duration, gpu_time") from None
        if (vc is None or row.get("cluster") == vc) and (start is None or stamp >= datetime.fromisoformat(start)) and gpu_time > 0:
            records.append((stamp, duration, gpu_time))
    records.sort()
    records = records[:jobs] if jobs else records
    if not records:
        raise WorkloadError(f"{path}: no jobs match (vc={vc!r}, start={start!r})")
    by_size = sorted(graphs, key=sequential_iteration_s)
    edges: np.ndarray | list[float]
    edges = np.quantile([g for _, _, g in records], np.linspace(0, 1, len(by_size) + 1)[1:-1]) if len(by_size) > 1 else []
    t0 = records[0][0]
    out = []
    for stamp, duration, gpu_time in records:
        graph = by_size[int(np.searchsorted(edges, gpu_time, side="right"))]
        iterations = max(1, round(gpu_time / sequential_iteration_s(graph)))
        beta = float(np.clip(duration / gpu_time, BETA_FLOOR, 1.0))
        out.append(TraceRow((stamp - t0).total_seconds(), graph.name, beta, iterations))
    return out


def write_trace(rows: Sequence[TraceRow], out: str | Path) -> Path:
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["arrival_s", "graph", "beta", "iterations"])
            writer.writerows([r.arrival_s, r.graph, f"{r.beta:.6g}", r.iterations] for r in rows)
    except OSError as exc:
        raise WorkloadError(f"cannot write trace {str(out)!r}: {exc.strerror or exc}") from None
    return out


def _read(path: str | Path) -> str:
    return read_text(path, what="trace", error=WorkloadError)


def _sorted(rows: list[TraceRow], path) -> list[TraceRow]:
    if not rows:
        raise WorkloadError(f"{path}: trace has no jobs")
    return sorted(rows, key=lambda r: r.arrival_s)
