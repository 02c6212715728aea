"""Durable reservations for the placement service: SQLite in WAL mode.

A reservation is written and committed (``synchronous=FULL``) before the service answers the
request that made it, so no reservation acknowledged to a client is lost by a crash, ``kill -9``
included; a release is committed before its answer too. At start the service reads the table
back and the devices stay held. The file records its cluster's name and device names: a file
made for another cluster is refused rather than misread. ``path=None`` keeps state in memory.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from placer.common.errors import PlacerError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (
    job_id TEXT PRIMARY KEY,
    graph TEXT NOT NULL,
    devices TEXT NOT NULL,
    reserved_at_s REAL NOT NULL,
    predicted_jct_s REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Reservation:
    job_id: str
    graph: str
    devices: tuple[str, ...]
    reserved_at_s: float  # Unix time (wall clock)
    predicted_jct_s: float


class ReservationStore:
    """The reservations table. Not thread-safe by itself: the service calls it under its lock."""

    def __init__(self, path: str | Path | None, *, cluster: str, devices: list[str]) -> None:
        self.path = Path(path) if path is not None else None
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path) if self.path else ":memory:", check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise PlacerError(f"cannot open reservation state {str(path)!r}: {exc}") from None
        self._bind(cluster, devices)

    def _bind(self, cluster: str, devices: list[str]) -> None:
        stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        fingerprint = json.dumps(devices)
        if not stored:
            with self._db:
                self._db.executemany("INSERT INTO meta VALUES (?, ?)", [("cluster", cluster), ("devices", fingerprint)])
        elif stored.get("cluster") != cluster or stored.get("devices") != fingerprint:
            raise PlacerError(
                f"reservation state {str(self.path)!r} belongs to cluster {stored.get('cluster')!r} with other devices; "
                f"use another --state file for {cluster!r}"
            )

    def load(self) -> list[Reservation]:
        rows = self._db.execute("SELECT job_id, graph, devices, reserved_at_s, predicted_jct_s FROM reservations ORDER BY reserved_at_s")
        return [Reservation(j, g, tuple(json.loads(d)), t, p) for j, g, d, t, p in rows.fetchall()]

    def add(self, r: Reservation) -> None:
        with self._db:
            row = (r.job_id, r.graph, json.dumps(list(r.devices)), r.reserved_at_s, r.predicted_jct_s)
            self._db.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?)", row)

    def remove(self, job_id: str) -> None:
        with self._db:
            self._db.execute("DELETE FROM reservations WHERE job_id = ?", (job_id,))

    def close(self) -> None:
        self._db.close()
