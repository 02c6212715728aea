"""The public trace formats ``placer import trace`` reads under the shared rules, and the one call that imports any.

Gavel's and Pollux's Philly summary have importers of their own (:mod:`~placer.workloads.traces.gavel`,
:mod:`~placer.workloads.traces.philly`); every other format is a :class:`~placer.workloads.traces.core.TraceFormat`
here, read by its module and mapped by :func:`~placer.workloads.traces.mapping.convert`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NoReturn

from placer.common.errors import WorkloadError
from placer.workloads.traces import acme, helios, openb, pai, philly_log, pollux
from placer.workloads.traces.core import ImportReport, TraceFormat, TraceRow, wall_seconds
from placer.workloads.traces.mapping import DeadlineRule, GraphMapping, convert

FORMATS: dict[str, TraceFormat] = {
    f.kind: f for f in (philly_log.FORMAT, helios.FORMAT, pai.FORMAT, openb.FORMAT, acme.FORMAT, pollux.FORMAT)
}


def trace_format(kind: str) -> TraceFormat:
    if kind not in FORMATS:
        raise WorkloadError(f"unknown trace kind {kind!r}: use gavel, philly or {', '.join(FORMATS)}")
    return FORMATS[kind]


def start_seconds(start: str, fmt: TraceFormat) -> float:
    """``--start`` on the trace's wall clock: an ISO date or time (``2020-04-01``, ``2020-04-01 08:00``), or a finite number
    of seconds as the trace's time column writes them."""
    try:
        seconds = float(start)
    except ValueError:
        try:
            return wall_seconds(start)
        except ValueError:
            _bad_start(start)
    if not math.isfinite(seconds):
        _bad_start(start)
    return seconds + fmt.clock_shift_s


def _bad_start(start: str) -> NoReturn:
    raise WorkloadError(f"bad --start {start!r}: use an ISO date or time (2020-04-01 08:00) or seconds of the trace's clock")


def import_trace(
    kind: str,
    path: str | Path,
    mapping: GraphMapping,
    rule: DeadlineRule,
    *,
    start: str | None = None,
    jobs: int | None = None,
    vc: str | None = None,
) -> tuple[list[TraceRow], ImportReport]:
    """Read a ``kind`` trace at ``path`` and map its jobs to replay rows (rules in :mod:`placer.workloads.traces.mapping`)."""
    fmt = trace_format(kind)
    if vc is not None and not fmt.has_vc:
        raise WorkloadError(f"--vc: {kind} traces name no virtual clusters")
    if jobs is not None and jobs < 1:
        raise WorkloadError(f"--jobs {jobs}: at least 1")
    start_s = start_seconds(start, fmt) if start is not None else None
    return convert(fmt.parse(Path(path)), kind, mapping, rule, start_s=start_s, jobs=jobs, vc=vc)
