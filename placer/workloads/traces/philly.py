"""Philly as Pollux processed it (``philly_pollux.csv``: ``timestamp,duration,num_gpus,gpu_time,cluster``).

    placer import trace philly data/traces/philly_pollux.csv --out runs/philly.csv --vc 6214e9 --jobs 500

Jobs of one virtual cluster (``vc``, optional) from the first ``start`` on, ``jobs`` of them. Each job's
GPU time picks a graph by the shared bucket rule (:func:`~placer.workloads.traces.mapping.size_buckets`:
the graphs sorted by sequential iteration time split the jobs' GPU-time quantiles evenly); iterations make
the sequential JCT equal the trace's GPU time (at least 1). This importer predates the shared rules and
keeps two of its own, which the shipped figures replay: arrivals count from the first job, and the deadline
is the observed duration, beta = clip(duration / GPU time, 0.05, 1) (a job that ran on n GPUs for the whole
time gets 1/n). ``placer import trace philly-log`` reads Microsoft's own job log under the shared rules.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text
from placer.graphs.job_graph import JobGraph
from placer.workloads.traces.core import TraceRow
from placer.workloads.traces.mapping import iterations_for, size_buckets

BETA_FLOOR = 0.05


def convert_philly(
    path: str | Path,
    graphs: Sequence[JobGraph],
    sequential_iteration_s: Callable[[JobGraph], float],
    *,
    vc: str | None = None,
    start: str | None = None,
    jobs: int | None = None,
    dropped: Counter[str] | None = None,
    vcs: Counter[str] | None = None,
) -> list[TraceRow]:
    """Replay rows of the Pollux Philly summary; the rows left out are counted by reason in ``dropped`` when given, the
    jobs kept by virtual cluster in ``vcs``."""
    dropped = Counter() if dropped is None else dropped
    reader = csv.DictReader(read_text(path, what="trace", error=WorkloadError).splitlines())
    try:
        rows = list(reader)
    except csv.Error as exc:  # a field over the csv module's 128 KiB limit
        raise WorkloadError(f"{path}:{reader.line_num}: {exc}") from None
    first = datetime.fromisoformat(start) if start is not None else None
    records = []
    for line_no, row in enumerate(rows, start=2):
        try:
            stamp = datetime.fromisoformat(row["timestamp"])
            duration, gpu_time = float(row["duration"]), float(row["gpu_time"])
        except (KeyError, TypeError, ValueError):
            raise WorkloadError(f"{path}:{line_no}: need timestamp, duration, gpu_time") from None
        reason = _drop_reason(row, stamp, gpu_time, vc, first)
        if reason is None:
            records.append((stamp, duration, gpu_time, row.get("cluster") or "?"))
        else:
            dropped[reason] += 1
    records.sort()
    if jobs and len(records) > jobs:
        dropped["after --jobs"] += len(records) - jobs
        records = records[:jobs]
    if not records:
        raise WorkloadError(f"{path}: no jobs match (vc={vc!r}, start={start!r})")
    if vcs is not None:
        vcs.update(record[3] for record in records)
    t0 = records[0][0]
    chosen = size_buckets(graphs, sequential_iteration_s, [record[2] for record in records])
    return [
        TraceRow(
            (stamp - t0).total_seconds(),
            graph.name,
            float(np.clip(duration / gpu_time, BETA_FLOOR, 1.0)),
            iterations_for(gpu_time, sequential_iteration_s(graph)),
        )
        for (stamp, duration, gpu_time, _), graph in zip(records, chosen, strict=True)
    ]


def _drop_reason(row: dict[str, str], stamp: datetime, gpu_time: float, vc: str | None, first: datetime | None) -> str | None:
    if vc is not None and row.get("cluster") != vc:
        return "other vc"
    if first is not None and stamp < first:
        return "before --start"
    if not gpu_time > 0:
        return "no GPU time"
    return None
