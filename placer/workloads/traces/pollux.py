"""Pollux's (OSDI '21) and Sia's (SOSP '23) workload CSVs (``simulator/workloads*/workload-N.csv``), one job a row.

Columns ``name,time,application,num_replicas,batch_size`` (later ones add ``samples``): ``time`` is seconds from
the window's start (Pollux draws windows of Philly days from a starting hour, 2 a.m. by default: the start
stands for a midnight here), ``application`` one of Pollux's six models, ``num_replicas`` its GPUs. The rows have
no run time: Pollux drew each application from a band of Philly GPU time (its ``workload.py``: cifar10 and ncf
under 1 GPU-hour, deepspeech2 and bert 1-10, yolov3 10-100, imagenet 100-1000, jobs of a minute and more), so a
job's GPU time is its band's geometric middle (:data:`GPU_SECONDS`) and its run time that over its replicas.
``batch_size`` is not read (the graph keeps its own). Every job completed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from placer.workloads.traces.core import Parsed, TraceFormat, TraceJob, parse_each, read_rows

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
REQUIRED = ("time", "application", "num_replicas")
_HOUR = 3600.0
GPU_SECONDS = {  # application -> GPU-seconds: the geometric middle of its band of Philly GPU time
    "cifar10": math.sqrt(60.0 * _HOUR),
    "ncf": math.sqrt(60.0 * _HOUR),
    "deepspeech2": math.sqrt(1 * 10) * _HOUR,
    "bert": math.sqrt(1 * 10) * _HOUR,
    "yolov3": math.sqrt(10 * 100) * _HOUR,
    "imagenet": math.sqrt(100 * 1000) * _HOUR,
}


def _job(row: Mapping[str, str]) -> TraceJob | str:
    application = row["application"].strip()
    if application not in GPU_SECONDS:
        return "unknown application"
    replicas = float(row["num_replicas"])
    return TraceJob(
        submit_s=float(row["time"]),
        gpus=replicas,
        duration_s=GPU_SECONDS[application] / replicas if replicas > 0 else 0.0,
        name=application,
    )


def parse(path: Path) -> Parsed:
    return parse_each(read_rows(path, "pollux", COLUMNS, REQUIRED), _job)


FORMAT = TraceFormat(
    "pollux", parse, COLUMNS, source="https://github.com/petuum/adaptdl/tree/osdi21-artifact/simulator", licence="Apache-2.0"
)
