"""Acme (Shanghai AI Lab, NSDI '24): ``trace_seren.csv`` and ``trace_kalos.csv``, one job a row.

Columns ``job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time``
(Kalos adds ``mem_per_pod_GB,shared_mem_per_pod`` and ``fail_time,stop_time``): times are ISO strings with an
offset (Seren's ``+08:00``, Kalos's ``+00:00``), read on the lab's clock, UTC+8; ``duration`` is seconds;
``state`` Slurm's. ``type`` (Pretrain, SFT, Evaluation, MLLM, Debug, Other) is the job's name. No GPU model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from placer.workloads.traces.core import Parsed, TraceFormat, TraceJob, parse_each, read_rows, slurm_job

COLUMNS = (
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time", "start_time", "end_time", "duration", "queue",
    "gpu_time",
)  # fmt: skip
REQUIRED = ("gpu_num", "type", "state", "submit_time", "duration")
LAB_UTC_OFFSET_H = 8.0  # Shanghai


def _job(row: Mapping[str, str]) -> TraceJob:
    return slurm_job(row, name=row["type"] or None, tz_hours=LAB_UTC_OFFSET_H)


def parse(path: Path) -> Parsed:
    return parse_each(read_rows(path, "acme", COLUMNS, REQUIRED), _job)


FORMAT = TraceFormat("acme", parse, COLUMNS, source="https://github.com/InternLM/AcmeTrace", licence="CC-BY-4.0")
