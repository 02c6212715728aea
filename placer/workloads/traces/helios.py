"""Helios (SenseTime, SC '21): a cluster's ``cluster_log.csv`` (Venus is the cluster published), one job a row.

Columns ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``:
times are wall-clock strings (``2020-04-01 00:00:07``), ``duration`` and ``queue`` seconds, ``state`` Slurm's.
Read: submission, GPUs, run time, state, virtual cluster. The log has no GPU model nor job name.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from placer.workloads.traces.core import Parsed, TraceFormat, TraceJob, parse_each, read_rows, slurm_job

COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time", "end_time", "duration", "queue")
REQUIRED = ("vc", "gpu_num", "state", "submit_time", "duration")


def _job(row: Mapping[str, str]) -> TraceJob:
    return slurm_job(row, vc=row["vc"])


def parse(path: Path) -> Parsed:
    return parse_each(read_rows(path, "helios", COLUMNS, REQUIRED), _job)


FORMAT = TraceFormat(
    "helios",
    parse,
    COLUMNS,
    source="https://github.com/S-Lab-System-Group/HeliosData",
    licence="CC-BY-4.0",
    has_vc=True,
)
