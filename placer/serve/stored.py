"""The rows a reservation store keeps (reservations, measurements) and the checks a row read back must pass."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from placer.graphs.job_graph import JobGraph
from placer.serve.errors import ReservationStateError
from placer.serve.schemas import RunningJob

MAX_TIMESTAMP_S = 253_402_300_799.0  # 9999-12-31T23:59:59Z: the latest time a datetime can show
MAX_DURATION_S = 1e12  # a predicted JCT or a lease: 30,000 years


@dataclass(frozen=True)
class Reservation:
    job_id: str
    graph: str
    devices: tuple[str, ...]
    reserved_at_s: float  # Unix time (wall clock)
    predicted_jct_s: float
    graph_key: str | None = None
    lease_s: float | None = None  # None: held until released
    expires_at_s: float | None = None  # Unix time the lease runs out unless renewed
    owner: str | None = None  # the tenant that placed it (None: placed before tenants, by the server's one tenant)


@dataclass(frozen=True)
class StoredMeasurement:
    graph_key: str
    devices: tuple[str, ...]
    step_time_s: float
    measured_at_s: float
    tenant: str = ""  # who reported it ("": reported before tenants)


def parse_row(where: str, job_id, graph, devices, reserved_at_s, predicted_jct_s, graph_key, lease_s, expires_at_s, owner) -> Reservation:
    if not isinstance(job_id, str) or not job_id:
        raise ReservationStateError(f"{where}: job_id must be non-empty text")
    if not isinstance(graph, str):
        raise ReservationStateError(f"{where}: graph must be text")
    if graph_key is not None and not isinstance(graph_key, str):
        raise ReservationStateError(f"{where}: graph_key must be text or null")
    if owner is not None and not isinstance(owner, str):
        raise ReservationStateError(f"{where}: owner must be text or null")
    names = device_list(where, devices)
    check_number(where, "reserved_at_s", reserved_at_s, MAX_TIMESTAMP_S)
    check_number(where, "predicted_jct_s", predicted_jct_s, MAX_DURATION_S)
    if (lease_s is None) != (expires_at_s is None):
        raise ReservationStateError(f"{where}: lease_s and expires_at_s must both be set or both be null")
    if lease_s is not None:
        check_number(where, "lease_s", lease_s, MAX_DURATION_S)
        check_number(where, "expires_at_s", expires_at_s, MAX_TIMESTAMP_S)
    return Reservation(
        job_id,
        graph,
        tuple(names),
        float(reserved_at_s),
        float(predicted_jct_s),
        graph_key,
        None if lease_s is None else float(lease_s),
        None if expires_at_s is None else float(expires_at_s),
        owner,
    )


def device_list(where: str, devices) -> list[str]:
    try:
        names = json.loads(devices) if isinstance(devices, str) else None
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise ReservationStateError(f"{where}: devices must be a JSON list of distinct device names")
    return names


def check_number(where: str, field: str, value, upper: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= upper:
        raise ReservationStateError(f"{where}: {field} must be a finite number in [0, {upper:g}]")


def running_job(r: Reservation) -> RunningJob:
    """A stored reservation as the service answers it (a running job, its reservation time also as ISO 8601)."""
    stamp = datetime.fromtimestamp(r.reserved_at_s, UTC).isoformat(timespec="milliseconds")
    return RunningJob(
        job_id=r.job_id,
        graph=r.graph,
        devices=list(r.devices),
        reserved_at_s=r.reserved_at_s,
        reserved_at=stamp,
        predicted_jct_s=r.predicted_jct_s,
        lease_s=r.lease_s,
        expires_at_s=r.expires_at_s,
        owner=r.owner,
    )


def graph_document(graph: JobGraph) -> str:
    """The graph as compact JSON, as the store keeps it."""
    return json.dumps(graph.to_dict(), separators=(",", ":"))
