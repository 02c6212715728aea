"""Durable service state: reservations, idempotency answers and measured step times; SQLite in WAL mode.

A reservation is written and committed (``synchronous=FULL``) before the service answers the
request that made it, so no reservation acknowledged to a client is lost by a crash, ``kill -9``
included; a release is committed before its answer too. At start the service reads the table
back and the devices stay held. ``path=None`` keeps state in memory.

What the store refuses, each in one line naming the file (and the row): a file another process
holds (an exclusive ``flock`` on ``FILE.lock`` for the store's lifetime, so two servers never
share one file and double-book; a new file and its lock file are made 0600, and SQLite gives its
``-wal`` and ``-shm`` files the same mode), a file made for another cluster, a file it cannot write, a file
that is not a reservation store (empty, another database, tables missing, a table of another
shape, a page that fails SQLite's ``quick_check``, meta rows deleted from a file that holds
state) unless ``reset`` says to start empty over it, and rows that do not make sense (bad JSON,
unknown or repeated devices, a device held twice, a time that is not a finite number or lies past
the year 9999, a step time outside what a report may give, an idempotency answer that is not a
placement decision: :meth:`ReservationStore.check_answers`).

Beside the reservations (with their optional lease expiry) the file keeps the first answer to
each idempotency key (the newest :data:`MAX_IDEMPOTENCY_KEYS`; a retry gets the same answer),
the ids of jobs whose lease ran out (the newest :data:`MAX_EXPIRED`: 410, not 404, after a
restart) and the step times clients measured (the newest :data:`MAX_MEASUREMENTS`, with the
graphs they ran, one document per graph, as many as the service's memory for kept reports holds:
:mod:`placer.serve.refit`; the service refits its cost model to them at start). Reservations and expired
ids name their owner, measurements their reporting tenant (:mod:`placer.serve.tenants`; null in
files written before tenants). Files of earlier versions are upgraded in place.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO

from placer.calibration.measurements import MAX_STEP_S
from placer.common.errors import PlacerError
from placer.serve.errors import ReservationStateError, StateUnavailableError
from placer.serve.stored import MAX_TIMESTAMP_S, Reservation, StoredMeasurement, check_number, device_list, parse_row

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (
    job_id TEXT PRIMARY KEY,
    graph TEXT NOT NULL,
    devices TEXT NOT NULL,
    reserved_at_s REAL NOT NULL,
    predicted_jct_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, request_sha256 TEXT NOT NULL, response TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    graph_key TEXT NOT NULL, devices TEXT NOT NULL, step_time_s REAL NOT NULL, measured_at_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS graphs (key TEXT PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS expired (job_id TEXT PRIMARY KEY, expires_at_s REAL NOT NULL);
"""
COLUMNS = {  # what each table must have (after the upgrade below)
    "meta": {"key", "value"},
    "reservations": {"job_id", "graph", "devices", "reserved_at_s", "predicted_jct_s", "graph_key", "lease_s", "expires_at_s", "owner"},
    "idempotency": {"key", "request_sha256", "response"},
    "measurements": {"graph_key", "devices", "step_time_s", "measured_at_s", "tenant"},
    "graphs": {"key", "document"},
    "expired": {"job_id", "expires_at_s", "owner"},
}
ADDED_COLUMNS = {"graph_key": "TEXT", "lease_s": "REAL", "expires_at_s": "REAL", "owner": "TEXT"}  # reservations, since version 2
LATER_COLUMNS = {"reservations": ADDED_COLUMNS, "measurements": {"tenant": "TEXT"}, "expired": {"owner": "TEXT"}}  # null in older files
TABLES = {"meta", "reservations"}  # a store has these; the others are made when missing
OPTIONAL_TABLES = {"idempotency", "measurements", "graphs", "expired"}
MAX_IDEMPOTENCY_KEYS = 10_000
MAX_EXPIRED = 10_000  # ids of jobs whose lease ran out, kept to answer 410 (not 404) after a restart
MAX_MEASUREMENTS = 500
log = logging.getLogger("placer.serve")
RESET_HINT = "--reset-state starts empty over it (its reservations are lost)"
DROP_HINT = "delete that row of table idempotency (a retry with the key is then placed anew), or " + RESET_HINT
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ReservationStore:
    """The reservations table. Not thread-safe by itself: the service calls it under its lock."""

    def __init__(self, path: str | Path | None, *, cluster: str, devices: list[str], reset: bool = False, create_folder: bool = False):
        """``reset``: start empty over a file that is not a reservation store (its contents are lost);
        ``create_folder``: make the file's folder if missing (else a missing folder is an error)."""
        self.path = Path(path) if path is not None else None
        self.devices = devices
        self._lock_file: TextIO | None = None
        self.unwritable_since: float | None = None  # monotonic time of the first failed write of the episode in progress
        if self.path is not None:
            self._prepare_file(reset, create_folder)
        try:
            self._db = sqlite3.connect(str(self.path) if self.path else ":memory:", check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._check_layout()
            self._db.executescript(SCHEMA)
            self._upgrade()
            self._check_shape()
            self._db.execute("BEGIN IMMEDIATE")  # fails now, not at the first placement, if the file cannot be written
            self._db.execute("ROLLBACK")
        except PlacerError:
            self.close()
            raise
        except sqlite3.DatabaseError as exc:
            self.close()
            raise ReservationStateError(f"reservation state {str(path)!r} is not a reservation store ({exc}); {RESET_HINT}") from None
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise ReservationStateError(f"cannot use reservation state {str(path)!r}: {exc}") from None
        try:
            self._bind(cluster, devices)
        except PlacerError:
            self.close()
            raise

    def _prepare_file(self, reset: bool, create_folder: bool) -> None:
        assert self.path is not None
        if not self.path.parent.is_dir():
            if not create_folder:
                raise ReservationStateError(f"reservation state {str(self.path)!r}: folder {str(self.path.parent)!r} does not exist")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not os.access(self.path, os.R_OK | os.W_OK):
            raise ReservationStateError(f"reservation state {str(self.path)!r} is not readable and writable by this user")
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            self._lock_file = lock_file = _private(lock_path)  # held open: the lock lives as long as the store
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ReservationStateError(
                f"reservation state {str(self.path)!r} is in use by another placer serve (it holds {str(lock_path)!r})"
            ) from None
        except OSError as exc:
            self.close()
            raise ReservationStateError(f"cannot lock reservation state {str(self.path)!r}: {exc.strerror or exc}") from None
        if reset and self.path.exists():
            for stale in (self.path, self.path.with_name(self.path.name + "-wal"), self.path.with_name(self.path.name + "-shm")):
                stale.unlink(missing_ok=True)
        elif self.path.exists() and self.path.stat().st_size == 0:
            self.close()
            raise ReservationStateError(f"reservation state {str(self.path)!r} is an empty file, not a reservation store; {RESET_HINT}")
        if not self.path.exists():  # made here, 0600: SQLite gives its -wal and -shm files the database file's mode
            _private(self.path).close()

    def _check_layout(self) -> None:
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and not (TABLES <= tables <= TABLES | OPTIONAL_TABLES):
            missing = sorted(TABLES - tables)
            what = f"table {', '.join(missing)} missing" if missing else f"other tables ({', '.join(sorted(tables))})"
            raise ReservationStateError(f"reservation state {str(self.path)!r} is not a reservation store ({what}); {RESET_HINT}")

    def _check_shape(self) -> None:
        """Every table has its columns, and SQLite's quick_check finds no damaged page."""
        for table, columns in COLUMNS.items():
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if have != columns:
                wrong = ", ".join([*(f"no {c}" for c in sorted(columns - have)), *(f"unknown {c}" for c in sorted(have - columns))])
                raise ReservationStateError(
                    f"reservation state {str(self.path)!r} is not a reservation store (table {table}: {wrong}); {RESET_HINT}"
                )
        problems = [row[0] for row in self._db.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise ReservationStateError(f"reservation state {str(self.path)!r} is damaged ({'; '.join(problems)[:200]}); {RESET_HINT}")

    def _upgrade(self) -> None:
        for table, added in LATER_COLUMNS.items():
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for column, kind in added.items():
                if column not in have:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def _bind(self, cluster: str, devices: list[str]) -> None:
        stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        fingerprint = json.dumps(devices)
        if not stored:
            held = self._db.execute("SELECT EXISTS (SELECT 1 FROM reservations) OR EXISTS (SELECT 1 FROM measurements)").fetchone()[0]
            if held:  # a file with state whose meta rows were deleted: any cluster could adopt it
                what = "holds reservations or measurements but names no cluster (meta rows missing)"
                raise ReservationStateError(f"reservation state {str(self.path)!r} {what}; {RESET_HINT}")
            with self._db:
                self._db.executemany("INSERT INTO meta VALUES (?, ?)", [("cluster", cluster), ("devices", fingerprint)])
        elif stored.get("cluster") != cluster or stored.get("devices") != fingerprint:
            raise ReservationStateError(
                f"reservation state {str(self.path)!r} belongs to cluster {stored.get('cluster')!r} with other devices; "
                f"use another --state file for {cluster!r}"
            )

    def load(self) -> list[Reservation]:
        """Every stored reservation, checked: one line naming the file and row for the first that makes no sense."""
        rows = self._read(
            f"SELECT rowid, job_id, graph, devices, reserved_at_s, predicted_jct_s, {', '.join(ADDED_COLUMNS)} "
            "FROM reservations ORDER BY reserved_at_s"
        )
        known, held = set(self.devices), dict[str, str]()
        out = []
        for rowid, *fields in rows:
            where = f"reservation state {str(self.path)!r}, row {rowid}"
            reservation = parse_row(where, *fields)
            for name in reservation.devices:
                if name not in known:
                    raise ReservationStateError(f"{where}: unknown device {name[:64]!r}")
                if name in held:
                    raise ReservationStateError(f"{where}: device {name!r} is held by job {held[name]!r} too")
                held[name] = reservation.job_id
            out.append(reservation)
        return out

    def add(self, r: Reservation | None, *, answer: tuple[str, str, str] | None = None) -> None:
        """Commit a reservation and/or the answer to an idempotency key ``(key, request_sha256, response)`` in one transaction."""
        with self._writing():
            if r is not None:
                row = (r.job_id, r.graph, json.dumps(list(r.devices)), r.reserved_at_s, r.predicted_jct_s, r.graph_key, r.lease_s)
                self._db.execute(
                    f"INSERT INTO reservations (job_id, graph, devices, reserved_at_s, predicted_jct_s, {', '.join(ADDED_COLUMNS)}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*row, r.expires_at_s, r.owner),
                )
            if answer is not None:
                self._keep_answer(answer)

    def move(self, job_id: str, devices: tuple[str, ...], predicted_jct_s: float, *, answer: tuple[str, str, str] | None = None) -> None:
        """Swap a job's devices and predicted JCT, and keep the answer to an idempotency key, in one transaction: a crash
        leaves the old reservation or the new one, never both or neither (one row holds the devices)."""
        with self._writing():
            update = "UPDATE reservations SET devices = ?, predicted_jct_s = ? WHERE job_id = ?"
            self._db.execute(update, (json.dumps(list(devices)), predicted_jct_s, job_id))
            if answer is not None:
                self._keep_answer(answer)

    def _keep_answer(self, answer: tuple[str, str, str]) -> None:
        self._db.execute("INSERT INTO idempotency (key, request_sha256, response) VALUES (?, ?, ?)", answer)
        self._db.execute("DELETE FROM idempotency WHERE rowid <= (SELECT MAX(rowid) FROM idempotency) - ?", (MAX_IDEMPOTENCY_KEYS,))

    def answer(self, key: str) -> tuple[str, str] | None:
        """(request_sha256, response) stored for an idempotency key, or None."""
        row = self._db.execute("SELECT request_sha256, response FROM idempotency WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def check_answers(self, parse: Callable[[str], object]) -> None:
        """Every stored idempotency answer is a text key, a SHA-256 hex digest and a response ``parse`` accepts (raises
        otherwise); :class:`ReservationStateError` in one line naming the file and the key of the first that is not (a
        retry would otherwise find it only when answered)."""
        for key, digest, response in self._read("SELECT key, request_sha256, response FROM idempotency ORDER BY rowid"):
            where = f"reservation state {str(self.path)!r}, idempotency key {str(key)[:64]!r}"
            if not isinstance(key, str) or not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise ReservationStateError(f"{where}: key must be text and request_sha256 a SHA-256 hex digest; {DROP_HINT}")
            try:
                parse(response)
            except (ValueError, TypeError) as exc:
                why = _first_error(exc)
                raise ReservationStateError(f"{where}: the stored answer is not a placement decision ({why}); {DROP_HINT}") from None

    def renew(self, job_id: str, lease_s: float, expires_at_s: float) -> None:
        with self._writing():
            self._db.execute("UPDATE reservations SET lease_s = ?, expires_at_s = ? WHERE job_id = ?", (lease_s, expires_at_s, job_id))

    def expire(self, jobs: list[tuple[str, float, str | None]]) -> None:
        """Remove the reservations whose lease ran out, ``(job id, when, owner)``, remembering their ids and owners (the
        newest :data:`MAX_EXPIRED`)."""
        with self._writing():
            for job_id, expires_at_s, owner in jobs:
                self._db.execute("DELETE FROM reservations WHERE job_id = ?", (job_id,))
                remembered = (job_id, expires_at_s, owner)
                self._db.execute("INSERT OR REPLACE INTO expired (job_id, expires_at_s, owner) VALUES (?, ?, ?)", remembered)
            self._db.execute("DELETE FROM expired WHERE rowid <= (SELECT MAX(rowid) FROM expired) - ?", (MAX_EXPIRED,))

    def expired(self) -> list[tuple[str, float, str | None]]:
        """(job id, when its lease ran out, its owner) of the remembered expired jobs, oldest first; rows that make no sense
        are skipped."""
        rows = self._read("SELECT job_id, expires_at_s, owner FROM expired ORDER BY rowid")
        return [
            (j, float(t), o if isinstance(o, str) else None)
            for j, t, o in rows
            if isinstance(j, str) and isinstance(t, int | float) and 0 <= t <= MAX_TIMESTAMP_S
        ]

    def remove(self, job_id: str) -> None:
        with self._writing():
            self._db.execute("DELETE FROM reservations WHERE job_id = ?", (job_id,))

    def add_measurement(self, m: StoredMeasurement, document: str) -> None:
        """Keep a measured step time and its graph's JSON; the oldest go past :data:`MAX_MEASUREMENTS` (and graphs no row uses)."""
        with self._writing():
            self._db.execute("INSERT OR IGNORE INTO graphs (key, document) VALUES (?, ?)", (m.graph_key, document))
            self._db.execute(
                "INSERT INTO measurements (graph_key, devices, step_time_s, measured_at_s, tenant) VALUES (?, ?, ?, ?, ?)",
                (m.graph_key, json.dumps(list(m.devices)), m.step_time_s, m.measured_at_s, m.tenant),
            )
            self._db.execute("DELETE FROM measurements WHERE rowid <= (SELECT MAX(rowid) FROM measurements) - ?", (MAX_MEASUREMENTS,))
            self._db.execute("DELETE FROM graphs WHERE key NOT IN (SELECT graph_key FROM measurements)")

    def forget_graphs(self, keys: list[str]) -> None:
        """Drop the measurements of the graphs of content keys ``keys``, and those graphs."""
        with self._writing():
            self._db.executemany("DELETE FROM measurements WHERE graph_key = ?", [(key,) for key in keys])
            self._db.executemany("DELETE FROM graphs WHERE key = ?", [(key,) for key in keys])

    def graph_document(self, key: str) -> str | None:
        """The JSON document of the kept graph of content key ``key`` (None: none kept); read one at a time, when needed."""
        rows = self._read("SELECT document FROM graphs WHERE key = ?", (key,))
        return rows[0][0] if rows and isinstance(rows[0][0], str) else None

    def measurements(self) -> list[StoredMeasurement]:
        """The kept measurements, oldest first (their graphs: :meth:`graph_document`)."""
        rows = self._read("SELECT rowid, graph_key, devices, step_time_s, measured_at_s, tenant FROM measurements ORDER BY rowid")
        out = []
        for rowid, graph_key, devices, step_time_s, measured_at_s, tenant in rows:
            where = f"reservation state {str(self.path)!r}, measurement row {rowid}"
            names = device_list(where, devices)
            check_number(where, "step_time_s", step_time_s, MAX_STEP_S)
            if step_time_s == 0:
                raise ReservationStateError(f"{where}: step_time_s must be > 0")
            check_number(where, "measured_at_s", measured_at_s, MAX_TIMESTAMP_S)
            source = tenant if isinstance(tenant, str) else ""
            out.append(StoredMeasurement(str(graph_key), tuple(names), float(step_time_s), float(measured_at_s), source))
        return out

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One committed transaction (``BEGIN IMMEDIATE`` .. ``COMMIT``: all of it or none of it); a full disk or a failing
        device is :class:`StateUnavailableError` (503: retry later), logged once per episode (:attr:`unwritable_since`
        set), and the first write that succeeds after it is logged too."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if self.unwritable_since is None:
                self.unwritable_since = time.monotonic()
                log.error("reservation state %s cannot be written (%s): writes answer 503, reads go on", self.path or "in memory", exc)
            raise StateUnavailableError(f"reservation state cannot be written ({exc}); nothing was changed: retry later") from None
        if self.unwritable_since is not None:
            down_s = time.monotonic() - self.unwritable_since
            log.warning("reservation state %s written again, %.0f s after it could not be", self.path, down_s)
            self.unwritable_since = None

    def _read(self, query: str, parameters: tuple = ()) -> list[tuple]:
        """All rows of ``query``; a damaged file is one line (not a traceback)."""
        try:
            return self._db.execute(query, parameters).fetchall()
        except sqlite3.DatabaseError as exc:
            raise ReservationStateError(f"reservation state {str(self.path)!r} cannot be read ({exc}); {RESET_HINT}") from None

    def close(self) -> None:
        """Close the database (a clean close leaves no -wal or -shm file) and release the lock."""
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()
            del self._db
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def _private(path: Path) -> TextIO:
    """``path`` opened for appending, made readable and writable by this user only (0600) if it is new."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a")


def _first_error(exc: Exception) -> str:
    """A parse error in a few words: pydantic's first error (where, and what), else the exception's first line."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and errors():
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first.get('loc', ())) or 'document'}: {first.get('msg', 'invalid')}"[:160]
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]
