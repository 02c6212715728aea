"""Microsoft's Philly job log (``cluster_job_log``, msr-fiddle/philly-traces): a JSON list, one object a job.

Keys ``status`` (Pass, Killed, Failed), ``vc``, ``jobid``, ``user``, ``submitted_time`` (wall-clock string) and
``attempts``, each with ``start_time``, ``end_time`` and ``detail``, a list of ``{"ip": machine, "gpus": [...]}``.
GPUs: those of the last attempt that has both times; run time: the sum of those attempts' spans. A job with no
attempt never ran (no run time); one whose last attempt has no end was still running when the log was taken
(unfinished). Times are read as written (the cluster's local clock). No GPU model nor job name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text
from placer.workloads.traces.core import JobStatus, Parsed, TraceFormat, TraceJob, parse_each, wall_seconds

KEYS = ("status", "vc", "jobid", "attempts", "submitted_time", "user")
ATTEMPT_KEYS = ("start_time", "end_time", "detail")
STATUS: dict[str, JobStatus] = {"Pass": "completed", "Killed": "killed", "Failed": "failed"}


def _spans(attempts: list[Mapping[str, Any]]) -> tuple[float, int]:
    """Run time (s) of the attempts with both times, and the GPUs of the last of them."""
    run, gpus = 0.0, 0
    for attempt in attempts:
        if attempt.get("start_time") and attempt.get("end_time"):
            run += wall_seconds(attempt["end_time"]) - wall_seconds(attempt["start_time"])
            gpus = sum(len(machine.get("gpus") or ()) for machine in attempt.get("detail") or ())
    return run, gpus


def _job(entry: Mapping[str, Any]) -> TraceJob | str:
    submit_s = wall_seconds(entry["submitted_time"])
    status = STATUS.get(entry["status"])
    if status is None:
        return "unknown status"
    attempts = entry.get("attempts") or []
    if not attempts:
        return "no run time"
    if attempts and attempts[-1].get("start_time") and not attempts[-1].get("end_time"):
        status = "unfinished"
    run, gpus = _spans(attempts)
    return TraceJob(submit_s=submit_s, gpus=gpus, duration_s=run, status=status, vc=entry.get("vc"))


def parse(path: Path) -> Parsed:
    try:
        entries = json.loads(read_text(path, what="philly-log trace", error=WorkloadError))
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{path}: not a Philly job log (JSON): {exc}") from None
    if not isinstance(entries, list) or (entries and not (isinstance(entries[0], dict) and "submitted_time" in entries[0])):
        raise WorkloadError(f"{path}: not a Philly job log: expected a JSON list of jobs with keys {','.join(KEYS)}")
    return parse_each(entries, _job)


FORMAT = TraceFormat(
    "philly-log",
    parse,
    KEYS,
    source="https://github.com/msr-fiddle/philly-traces",
    licence="CC-BY-4.0",
    has_vc=True,
)
