"""Alibaba's 2023 GPU-sharing pod list (``cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv``), one pod a row.

Columns ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
scheduled_time``: times are seconds from the trace's own zero (its clock time is not published, so zero stands
for a midnight); ``gpu_milli`` is thousandths of a GPU per GPU (a shared GPU's share); ``gpu_spec`` the GPU
models a pod may run on (``V100M16|V100M32``; empty: any). GPUs = ``num_gpu`` x ``gpu_milli`` / 1000; run time
= deletion - scheduling; the GPU type is the first of ``gpu_spec``. Phases: Succeeded is completed, Running
(a pod deleted while it ran: the trace's services) killed, Failed failed, Pending (never scheduled) unfinished.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from placer.workloads.traces.core import JobStatus, Parsed, TraceFormat, TraceJob, number, parse_each, read_rows

COLUMNS = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
    "scheduled_time",
)  # fmt: skip
REQUIRED = ("num_gpu", "gpu_milli", "gpu_spec", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
PHASES: dict[str, JobStatus] = {"Succeeded": "completed", "Running": "killed", "Failed": "failed", "Pending": "unfinished"}


def _job(row: Mapping[str, str]) -> TraceJob | str:
    phase = PHASES.get(row["pod_phase"].strip())
    if phase is None:
        return "unknown phase"
    scheduled = row["scheduled_time"].strip()
    return TraceJob(
        submit_s=float(row["creation_time"]),
        gpus=number(row["num_gpu"]) * number(row["gpu_milli"]) / 1000,
        duration_s=float(row["deletion_time"]) - float(scheduled) if scheduled else 0.0,
        gpu_type=row["gpu_spec"].split("|")[0].strip() or None,
        status=phase,
    )


def parse(path: Path) -> Parsed:
    return parse_each(read_rows(path, "openb", COLUMNS, REQUIRED), _job)


FORMAT = TraceFormat(
    "openb",
    parse,
    COLUMNS,
    source="https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023",
    licence="no licence file; the repository's terms: use for research or study",
)
