"""Measured step times: validated rows, read from a CSV file or a list of dicts.

One row is one measured placement of one job::

    graph,devices,batch_size,precision,step_time_s
    resnet50,s0-g0 s0-g1,256,fp32,0.61

- ``graph``: a shipped graph name or a job-graph JSON path;
- ``devices``: the cluster's device names (``s<server>-g<index>``), space-separated in a CSV;
- ``batch_size``: the global batch of one step (samples over all devices); empty: the graph's own;
- ``precision``: ``fp32``, ``tf32``, ``bf16`` or ``fp16``; empty: the graph's own;
- ``step_time_s``: measured seconds per training step (iteration), finite and positive;
- ``strategy`` (optional): how the job was split, ``dp``, ``tp`` or ``pp``; empty or ``auto``: the
  cost model's fastest split.

Errors name the source and the row (the CSV's line number) in one line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from placer.cluster.devices import PRECISIONS
from placer.cluster.topology import Cluster
from placer.common.errors import PlacerError
from placer.common.textfile import read_text
from placer.graphs.catalog import resolve_graph
from placer.graphs.job_graph import JobGraph

COLUMNS = ("graph", "devices", "batch_size", "precision", "step_time_s", "strategy")
SPLITS = ("auto", "dp", "tp", "pp")
MAX_ROWS = 100_000
MAX_STEP_S = 1e5


class CalibrationError(PlacerError):
    """Measurements that cannot be read, or that cannot support a fit."""


class Measurement(BaseModel):
    """One measured step time (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    graph: str = Field(min_length=1, max_length=4096)
    devices: tuple[str, ...] = Field(min_length=1, max_length=4096)
    batch_size: int | None = Field(None, ge=1, le=10**9)
    precision: str | None = None
    step_time_s: float = Field(gt=0, le=MAX_STEP_S, allow_inf_nan=False)
    strategy: str | None = None

    @field_validator("devices", mode="before")
    @classmethod
    def _split(cls, value):
        return tuple(value.split()) if isinstance(value, str) else value

    @field_validator("strategy")
    @classmethod
    def _known_split(cls, value: str | None) -> str | None:
        if value is not None and value not in SPLITS:
            raise ValueError(f"unknown strategy {value!r} (known: {', '.join(SPLITS)})")
        return value

    @field_validator("precision")
    @classmethod
    def _known_precision(cls, value: str | None) -> str | None:
        if value is not None and value not in PRECISIONS:
            raise ValueError(f"unknown precision {value!r} (known: {', '.join(PRECISIONS)})")
        return value


@dataclass(frozen=True)
class Row:
    """A measurement resolved against a cluster: the job graph at its batch and precision, and device ids."""

    label: str  # where it came from, for messages ("measurements.csv line 4")
    graph: JobGraph
    devices: tuple[int, ...]
    step_time_s: float
    strategy: str = "auto"
    job: str | None = None  # whose own constants it informs (jobs.JOB.*): None, the graph's name; the service gives its content key
    source: str = ""  # who measured it (the service: the reporting tenant)

    @property
    def job_name(self) -> str:
        """The name of the job's own constants (``jobs.NAME.*``) this row informs."""
        return self.job if self.job is not None else self.graph.name


def read_measurements(source: str | Path | Iterable[Mapping], cluster: Cluster) -> list[Row]:
    """Validated rows from a CSV path or a list of dicts (keys: :data:`COLUMNS`)."""
    if isinstance(source, str | Path):
        name = str(source)
        records = list(_csv_records(read_text(source, what="measurements file"), name))
    else:
        name = "measurements"
        records = [(f"row {i}", dict(r) if isinstance(r, Mapping) else r) for i, r in enumerate(source)]
    if not records:
        raise CalibrationError(f"{name}: no measurements")
    if len(records) > MAX_ROWS:
        raise CalibrationError(f"{name}: {len(records)} rows; at most {MAX_ROWS:,}")
    graphs: dict[tuple, JobGraph] = {}
    return [_resolve(label, record, cluster, graphs) for label, record in records]


def _load(name: str, graphs: dict[tuple, JobGraph]) -> JobGraph:
    if (name,) not in graphs:
        graphs[(name,)] = resolve_graph(name)
    return graphs[(name,)]


def _csv_records(text: str, name: str) -> Iterable[tuple[str, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("graph", "devices", "step_time_s") if c not in (reader.fieldnames or [])]
    if missing:
        raise CalibrationError(f"{name}: missing column(s) {', '.join(missing)} (columns: {', '.join(COLUMNS)})")
    extra = [c for c in reader.fieldnames or [] if c not in COLUMNS]
    if extra:
        raise CalibrationError(f"{name}: unknown column(s) {', '.join(map(repr, extra))} (columns: {', '.join(COLUMNS)})")
    for record in _rows(reader, name):
        if None in record:
            raise CalibrationError(f"{name} line {reader.line_num}: more fields than columns")
        yield f"{name} line {reader.line_num}", {k: (v if v not in ("", None) else None) for k, v in record.items()}


def _rows(reader: csv.DictReader, name: str) -> Iterable[dict]:
    """The reader's records; a line the csv module cannot read (a field over its 128 KiB limit) is one error line."""
    try:
        yield from reader
    except csv.Error as exc:
        raise CalibrationError(f"{name} line {reader.line_num}: {exc}") from None


def _resolve(label: str, record, cluster: Cluster, graphs: dict[tuple, JobGraph]) -> Row:
    if not isinstance(record, Mapping):
        raise CalibrationError(f"{label}: expected a mapping with keys {', '.join(COLUMNS)}, got {type(record).__name__}")
    try:
        m = Measurement.model_validate(record)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        raise CalibrationError(f"{label}: {where}: {first['msg']}") from None
    unknown = [d for d in m.devices if d not in cluster.device_index]
    if unknown:
        raise CalibrationError(f"{label}: unknown device {unknown[0][:80]!r} on cluster {cluster.name!r} (names look like s0-g0)")
    if len(set(m.devices)) != len(m.devices):
        raise CalibrationError(f"{label}: a device appears twice in {' '.join(m.devices)[:200]!r}")
    key = (m.graph, m.batch_size, m.precision)
    if key not in graphs:
        try:
            graph = _load(m.graph, graphs)
        except PlacerError as e:
            raise CalibrationError(f"{label}: {e}") from None
        if m.batch_size is not None:
            graph = graph.with_batch_size(m.batch_size)
        graphs[key] = graph.with_precision(m.precision) if m.precision else graph
    return Row(label, graphs[key], tuple(cluster.device_index[d] for d in m.devices), m.step_time_s, m.strategy or "auto")
