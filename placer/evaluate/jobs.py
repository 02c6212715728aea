"""An evaluation's per-job table, ``jobs.csv``: one row per (policy, run, job), streamed to disk run by run.

Columns (:data:`JOB_COLUMNS`): the run (``policy`` as the results name it, ``load``: empty for a replayed trace, whose
arrivals set the load (tables older than that say 0.9, the unused default), ``beta_dist``, ``seed``), the job
(``job``: its id in arrival order, ``arrival_s``, ``graph``) and what happened to it: ``degree`` (devices it ran on, 0 when
blocked), ``devices`` (their names, space-separated), ``wait_s`` (arrival to start, or to leaving the queue),
``jct_s`` (start to finish, the run time alone: the ``mean_jct_s`` of the results), ``slowdown``, ``outcome``
(``completed`` or ``blocked``), ``reason`` (why it was blocked: :class:`~placer.sim.types.BlockReason`, empty when
completed) and ``avoidable`` (``true`` when the fastest placement on the idle cluster, started at arrival, meets its
deadline: some policy could accept it; :mod:`placer.sim.metrics`). Empty cells: undefined (a blocked job's JCT).

A job's **slowdown** is ``(wait_s + jct_s) / fastest_jct_s``: its time from arrival to finish over the shortest JCT any
placement gives it on the idle cluster (1: served at once, as fast as it can run; the mean over a run's completed jobs
is the results' ``mean_slowdown``). Blocked jobs have none.

The table is written through a temporary file beside ``jobs.csv``, renamed into place only when the evaluation
finishes (:func:`placer.common.atomic.atomic_path`): a crash leaves the old table or none, never half of one. Rows
are written as each run ends, so a large evaluation holds one run's rows at a time; ``results.json`` records the
table's rows and sha256, which reading checks (a table of another evaluation is refused).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import math
import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

import numpy as np

from placer.common.atomic import atomic_path
from placer.common.errors import ResultsError
from placer.evaluate.identity import sha256_of
from placer.sim.types import JobRecord, Outcome

JOBS_FILE = "jobs.csv"
JOB_COLUMNS = (
    "policy",
    "load",
    "beta_dist",
    "seed",
    "job",
    "arrival_s",
    "graph",
    "degree",
    "devices",
    "wait_s",
    "jct_s",
    "slowdown",
    "outcome",
    "reason",
    "avoidable",
)
DISTRIBUTIONS = ("jct_s", "wait_s", "slowdown")  # what report --jobs summarises, over the completed jobs
PERCENTILES = (50, 90, 99)

Row = tuple[str | int | float | None, ...]


def slowdown(record: JobRecord) -> float | None:
    """``(wait + JCT) / fastest JCT on the idle cluster`` of a completed job (module docstring); None when undefined."""
    if record.outcome is not Outcome.ACCEPTED or record.jct_s is None or not record.fastest_jct_s:
        return None
    return (record.wait_s + record.jct_s) / record.fastest_jct_s


def job_rows(records: Iterable[JobRecord], device_name: Callable[[int], str], run: tuple[str, float | None, str, int]) -> list[Row]:
    """The rows of one run's ``records``; ``run`` is (policy, load, beta distribution, seed), the load None (an empty cell)
    on a replayed trace; ``device_name`` names a device."""
    rows: list[Row] = []
    for r in records:
        completed = r.outcome is Outcome.ACCEPTED
        outcome = ("completed" if r.finish_s is not None else "accepted") if completed else r.outcome.value
        devices = " ".join(device_name(d) for d in r.devices) if completed else ""
        rows.append(
            (
                *run,
                r.job_id,
                r.arrival_s,
                r.graph,
                r.degree if completed else 0,
                devices,
                r.wait_s,
                r.jct_s,
                slowdown(r),
                outcome,
                r.reason.value if r.reason is not None else None,
                "true" if r.avoidable else "false",
            )
        )
    return rows


@dataclass(frozen=True)
class JobsTable:
    """A ``jobs.csv`` as results use it: its ``path``, ``rows`` and ``sha256`` (as recorded), which of its policies are
    kept and as what (``names``: as written -> as reported; the others are left out) and the seeds kept (``seeds``:
    ``[low, high)``, None for all): a merge (:func:`~placer.evaluate.results.merge_results`) renames and narrows."""

    path: Path
    rows: int
    sha256: str
    names: dict[str, str] = field(default_factory=dict)
    seeds: tuple[int, int] | None = None

    def renamed(self, rename: dict[str, str]) -> JobsTable:
        """The table with the policies it reports as ``old`` reported as ``rename[old]``."""
        return replace(self, names={mine: rename.get(shown, shown) for mine, shown in self.names.items()})

    def narrowed(self, keep: Iterable[str], seeds: tuple[int, int]) -> JobsTable:
        """The table with only the policies reported as one of ``keep``, on the seeds ``[low, high)``."""
        kept = set(keep)
        return replace(self, names={mine: shown for mine, shown in self.names.items() if shown in kept}, seeds=seeds)

    def record(self, folder: Path) -> dict:
        """What ``results.json`` in ``folder`` says of the table."""
        return {"file": Path(os.path.relpath(self.path, folder)).as_posix(), "rows": self.rows, "sha256": self.sha256}

    @classmethod
    def from_record(cls, record: dict, folder: Path, policies: Sequence[str]) -> JobsTable:
        """The table ``results.json`` in ``folder`` records, every policy as written."""
        return cls(folder / record["file"], int(record["rows"]), str(record["sha256"]), {p: p for p in policies})


class JobsWriter:
    """Writes ``jobs.csv`` run by run (:meth:`write`), into place when the ``with`` block ends without an error (module
    docstring); then :attr:`table` describes it. ``policies``: the evaluation's names, which the table keeps."""

    def __init__(self, path: Path, policies: Sequence[str]) -> None:
        self.path, self._policies = Path(path), list(policies)
        self._stack = contextlib.ExitStack()
        self._hash = hashlib.sha256()
        self.rows = 0
        self.table: JobsTable | None = None

    def __enter__(self) -> JobsWriter:
        tmp = self._stack.enter_context(atomic_path(self.path))
        self._file = self._stack.enter_context(tmp.open("wb"))
        self._put([JOB_COLUMNS])
        return self

    def write(self, rows: Sequence[Row]) -> None:
        """Append one run's rows."""
        self._put(rows)
        self.rows += len(rows)

    def _put(self, rows: Iterable[Sequence]) -> None:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        data = text.getvalue().encode()
        self._hash.update(data)
        self._file.write(data)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stack.__exit__(kind, error, trace)  # the file closed, then renamed into place (or removed on an error)
        if kind is None:
            self.table = JobsTable(self.path, self.rows, self._hash.hexdigest(), {p: p for p in self._policies})


def read_jobs(tables: Sequence[JobsTable]) -> Iterator[dict[str, str]]:
    """The rows of ``tables`` as dicts of text, each table checked against its record, its policies renamed and
    narrowed as it says (:class:`JobsTable`). One row at a time: a large table is never held whole."""
    for table in tables:
        path = Path(table.path)
        if not path.is_file():
            raise ResultsError(f"{str(path)!r} is missing: its results.json names it (copy it beside results.json, or evaluate again)")
        if sha256_of(path) != table.sha256:
            raise ResultsError(f"{str(path)!r} is not the per-job table its results.json was written with: evaluate again")
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if tuple(reader.fieldnames or ()) != JOB_COLUMNS:
                raise ResultsError(f"{str(path)!r}: not a per-job table (columns {', '.join(JOB_COLUMNS)})")
            for row in reader:
                shown = table.names.get(row["policy"])
                if shown is None or (table.seeds is not None and not table.seeds[0] <= int(row["seed"]) < table.seeds[1]):
                    continue
                row["policy"] = shown
                yield row


@dataclass
class JobSamples:
    """Per policy, the completed jobs' JCT, wait and slowdown (:data:`DISTRIBUTIONS`), the count of blocked jobs, and
    those counts by why they were blocked (``reasons``: a :class:`~placer.sim.types.BlockReason`'s value -> jobs)."""

    values: dict[str, dict[str, array]] = field(default_factory=dict)
    blocked: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, Counter[str]] = field(default_factory=dict)

    def completed(self, policy: str) -> int:
        return len(self.values[policy]["jct_s"]) if policy in self.values else 0

    def array(self, policy: str, metric: str) -> np.ndarray:
        """The values of ``metric`` of ``policy``'s completed jobs (empty if none)."""
        return np.frombuffer(self.values[policy][metric], dtype=float) if policy in self.values else np.array([])


def job_samples(rows: Iterable[dict[str, str]], policies: Sequence[str]) -> JobSamples:
    """The distributions of ``rows`` (:func:`read_jobs`) for each of ``policies``: pooled over loads, beta
    distributions and seeds (every policy faced the same streams), over the jobs that completed."""
    samples = JobSamples(
        {p: {m: array("d") for m in DISTRIBUTIONS} for p in policies}, dict.fromkeys(policies, 0), {p: Counter() for p in policies}
    )
    for row in rows:
        policy = row["policy"]
        if policy not in samples.values:
            continue
        if row["outcome"] != "completed":
            if row["outcome"] == "blocked":
                samples.blocked[policy] += 1
                samples.reasons[policy][row["reason"] or "unknown"] += 1
            continue
        for metric in DISTRIBUTIONS:
            samples.values[policy][metric].append(float(row[metric]) if row[metric] else math.nan)
    return samples


def percentiles(values: np.ndarray, qs: Sequence[float] = PERCENTILES) -> list[float]:
    """The ``qs`` percentiles of ``values``, NaNs left out, linear between the closest ranks (numpy's default); NaN each
    when no value is left."""
    values = values[~np.isnan(values)]
    return [float(v) for v in np.percentile(values, qs)] if len(values) else [math.nan] * len(qs)
