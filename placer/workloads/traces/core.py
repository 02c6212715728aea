"""The common core of the trace importers: a job as every trace gives it, the replay row, reading and reporting.

Every format module turns its rows into :class:`TraceJob` records (one per job; the rows it cannot read
counted by reason) and declares itself as a :class:`TraceFormat`; :mod:`placer.workloads.traces.mapping`
turns the jobs into :class:`TraceRow` records, the same way for every format.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text

JobStatus = Literal["completed", "killed", "failed", "unfinished"]
KEPT_STATUSES: tuple[JobStatus, ...] = ("completed", "killed")  # a failed job's run time is not its work; an unfinished one has none
DAY_S = 86_400.0
_EPOCH = datetime(1970, 1, 1)
Row = TypeVar("Row", bound=Mapping[str, Any])

# Slurm's job states (Helios, Acme). Acme's authors count TIMEOUT and NODE_FAIL as failures; so do we.
SLURM_STATUS: dict[str, JobStatus] = {
    "COMPLETED": "completed",
    "CANCELLED": "killed",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
    "OUT_OF_MEMORY": "failed",
    "RUNNING": "unfinished",
    "PENDING": "unfinished",
}


MAX_GPUS = 1e6  # more GPUs than any cluster a trace was taken on: a corrupt field
MAX_DURATION_S = 1e9  # 31 years


@dataclass(frozen=True)
class TraceJob:
    """One job of a public trace, in the units every importer shares.

    ``submit_s``: submission, in seconds from 1970-01-01 00:00 on the trace's own wall clock (so
    ``submit_s % 86400`` is its time of day; traces that publish only relative seconds count from
    their own zero). ``gpus``: GPUs requested, fractional where the trace shares GPUs. ``duration_s``:
    run time in seconds (0 when it never ran). ``gpu_type``: the trace's name for the GPU model, None
    where it has none. ``name``: the model, application or task type where the trace gives one.
    ``vc``: the virtual cluster, where the trace has them.
    """

    submit_s: float
    gpus: float
    duration_s: float
    gpu_type: str | None = None
    name: str | None = None
    status: JobStatus = "completed"
    vc: str | None = None

    def __post_init__(self) -> None:
        """ValueError (the row is ``unparsable``) for a time, GPU count or run time that is no finite number, a negative
        count or run time, or one beyond any cluster's (:data:`MAX_GPUS`, :data:`MAX_DURATION_S`)."""
        if not all(math.isfinite(x) for x in (self.submit_s, self.gpus, self.duration_s)):
            raise ValueError("a trace job's times and GPUs are finite numbers")
        if not (0 <= self.gpus <= MAX_GPUS and 0 <= self.duration_s <= MAX_DURATION_S):
            raise ValueError(f"a trace job asks for at most {MAX_GPUS:g} GPUs for at most {MAX_DURATION_S:g} s")

    @property
    def gpu_s(self) -> float:
        """GPU-seconds: GPUs x run time."""
        return self.gpus * self.duration_s


@dataclass(frozen=True)
class Parsed:
    """What a format module read: its jobs, the rows it read and those it could not use, by reason."""

    jobs: tuple[TraceJob, ...]
    rows: int
    dropped: Mapping[str, int]


@dataclass(frozen=True)
class TraceFormat:
    """A public trace format: how to read it, what it must contain, where it comes from.

    ``clock_shift_s`` moves the trace's time column onto its wall clock (PAI's seconds read in UTC+8);
    a numeric ``--start`` is a value of that column. ``has_vc``: its jobs name a virtual cluster."""

    kind: str
    parse: Callable[[Path], Parsed]
    columns: tuple[str, ...]
    source: str
    licence: str
    clock_shift_s: float = 0.0
    has_vc: bool = False


@dataclass(frozen=True)
class TraceRow:
    """One replayed job: arrival (s from the trace's origin), graph (a shipped name, or NAME@BATCH), deadline, iterations."""

    arrival_s: float
    graph: str
    beta: float
    iterations: int


@dataclass(frozen=True)
class ImportReport:
    """What an import kept, dropped (reason -> rows) and mapped ((graph, rule) -> jobs); ``origin_s``: where arrival 0
    stands on the trace's clock (None where the importer keeps its legacy origin, the first job)."""

    kind: str
    rows: int
    kept: int
    dropped: Mapping[str, int]
    mapped: Mapping[tuple[str, str], int]
    origin_s: float | None = None


def wall_seconds(text: str, tz_hours: float | None = None) -> float:
    """Seconds from 1970-01-01 00:00 of the wall clock an ISO time is written on (``2020-04-01 08:00:00``).

    A time with an offset (``+00:00``) is first moved to UTC + ``tz_hours`` when given, else read in its own offset.
    Raises ``ValueError`` (or ``TypeError`` for a missing value) when it is no time."""
    stamp = datetime.fromisoformat(text.strip())
    if stamp.tzinfo is not None:
        if tz_hours is not None:
            stamp = stamp.astimezone(timezone(timedelta(hours=tz_hours)))
        stamp = stamp.replace(tzinfo=None)
    return (stamp - _EPOCH).total_seconds()


def read_rows(path: Path, kind: str, columns: Sequence[str], required: Sequence[str]) -> list[dict[str, str]]:
    """The rows of a CSV with a header, as dicts; a header without every ``required`` column is one error naming them."""
    text = read_text(path, what=f"{kind} trace", error=WorkloadError)
    reader = csv.DictReader(text.splitlines())
    try:
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise WorkloadError(f"{path}: not in the {kind} layout: expected columns {','.join(columns)}; missing {', '.join(missing)}")
        return list(reader)
    except csv.Error as exc:  # a field over the csv module's 128 KiB limit
        raise WorkloadError(f"{path}:{reader.line_num}: {exc}") from None


def read_headerless(path: Path, kind: str, columns: Sequence[str]) -> tuple[list[dict[str, str]], int]:
    """Rows of a CSV published without a header (PAI's tables), skipping one if present; and the rows of the wrong width.

    A first row of the wrong width is one error naming the expected columns."""
    text = read_text(path, what=f"{kind} table", error=WorkloadError)
    try:
        raw = [r for r in csv.reader(text.splitlines()) if r]
    except csv.Error as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    if raw and [c.strip() for c in raw[0]] == list(columns):
        raw = raw[1:]
    if raw and len(raw[0]) != len(columns):
        raise WorkloadError(f"{path}: not a {kind} table: expected {len(columns)} columns {','.join(columns)}, got {len(raw[0])}")
    good = [dict(zip(columns, r, strict=True)) for r in raw if len(r) == len(columns)]
    return good, len(raw) - len(good)


def number(text: str | None) -> float:
    """A float from a trace field; an empty field is 0 (PAI and openb leave absent amounts empty)."""
    return float(text) if text and text.strip() and text.strip().lower() != "nan" else 0.0


def slurm_job(row: Mapping[str, str], *, name: str | None = None, vc: str | None = None, tz_hours: float | None = None) -> TraceJob:
    """A Slurm-style row (Helios, Acme): ``gpu_num``, ``duration`` (s), ``submit_time`` (ISO), ``state``."""
    state = (row["state"] or "").split()  # "CANCELLED by 1234" is CANCELLED
    return TraceJob(
        submit_s=wall_seconds(row["submit_time"], tz_hours),
        gpus=number(row["gpu_num"]),
        duration_s=number(row["duration"]),
        name=name,
        status=SLURM_STATUS.get(state[0] if state else "", "unfinished"),
        vc=vc,
    )


def parse_each(rows: Sequence[Row], job: Callable[[Row], TraceJob | str]) -> Parsed:
    """Apply ``job`` to every row: a :class:`TraceJob`, or the reason it is dropped; a row it cannot read is ``unparsable``."""
    jobs: list[TraceJob] = []
    dropped = Counter[str]()
    for row in rows:
        try:
            made = job(row)
        except (KeyError, TypeError, ValueError, AttributeError):
            made = "unparsable"
        if isinstance(made, str):
            dropped[made] += 1
        else:
            jobs.append(made)
    return Parsed(tuple(jobs), len(rows), dict(dropped))


def write_trace(rows: Sequence[TraceRow], out: str | Path) -> Path:
    """Write ``rows`` as placer's replay CSV (``arrival_s,graph,beta,iterations``), read by ``evaluate --trace``."""
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
