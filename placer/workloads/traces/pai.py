"""Alibaba PAI's 2020 GPU trace (``cluster-trace-gpu-v2020``): a job table, a task table and, optionally, an
instance table and a group-tag table, CSVs published without headers (the ``.header`` files name the columns).

    placer import trace pai path/to/tables --out runs/pai.csv     # or path/to/tables/pai_job_table.csv

``FILE`` is the folder of the tables or the job table, the others beside it under their published names.
- ``pai_job_table.csv``: ``job_name,inst_id,user,status,start_time,end_time``; ``start_time`` is the submission.
- ``pai_task_table.csv``: ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,
  gpu_type``; ``plan_gpu`` is percent of a GPU per instance. GPUs = sum of ``inst_num`` x ``plan_gpu`` / 100 over
  the job's tasks; GPU type: that of the task with most GPUs; run time: first task start to last task end.
- ``pai_instance_table.csv`` (optional): ``job_name,task_name,inst_name,worker_name,inst_id,status,start_time,
  end_time,machine``; when present, the run time is the first instance start to the last instance end.
- ``pai_group_tag_table.csv`` (optional): ``inst_id,user,gpu_type_spec,group,workload``; ``workload`` (bert,
  resnet, nmt, ...; about 9 % of instances) is the job's name.

Times are seconds, shifted by a constant; read in UTC+8 they keep the original time of day, so the job table's
``start_time`` + 8 h is the submission on the wall clock. Statuses: Terminated is completed, Failed failed,
Running and Waiting unfinished.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from placer.common.errors import WorkloadError
from placer.workloads.traces.core import JobStatus, Parsed, TraceFormat, TraceJob, number, parse_each, read_headerless

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
INSTANCE_COLUMNS = ("job_name", "task_name", "inst_name", "worker_name", "inst_id", "status", "start_time", "end_time", "machine")
TAG_COLUMNS = ("inst_id", "user", "gpu_type_spec", "group", "workload")
TABLES = {"job": "pai_job_table.csv", "task": "pai_task_table.csv", "instance": "pai_instance_table.csv", "tag": "pai_group_tag_table.csv"}
UTC8_S = 8 * 3600.0
STATUS: dict[str, JobStatus] = {"Terminated": "completed", "Failed": "failed", "Running": "unfinished", "Waiting": "unfinished"}


@dataclass
class _Totals:
    """What a job's task (or instance) rows add up to, summed while the table is read."""

    gpus: float = 0.0
    by_type: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # GPU type -> GPUs
    start: float = float("inf")
    end: float = float("-inf")

    def span(self, start: str, end: str) -> None:
        """Widen the span to ``start`` .. ``end`` (either may be blank); a ValueError, before any change, if unreadable."""
        begins, ends = (float(start) if start.strip() else self.start), (float(end) if end.strip() else self.end)
        self.start, self.end = min(self.start, begins), max(self.end, ends)

    @property
    def run_s(self) -> float:
        return self.end - self.start if self.end > self.start else 0.0


def tables(path: Path) -> dict[str, Path]:
    """The tables' paths: ``path`` is their folder or the job table; the task table must exist."""
    folder = path if path.is_dir() else path.parent
    found = {name: folder / file for name, file in TABLES.items()}
    if not path.is_dir():
        found["job"] = path
    for name in ("job", "task"):
        if not found[name].is_file():
            raise WorkloadError(f"{path}: a PAI trace needs {TABLES[name]} (here {found[name]})")
    return found


def _add_tasks(path: Path, dropped: Counter[str]) -> dict[str, _Totals]:
    """Each job's task rows summed: GPUs (by type) and the span of their times."""

    def add(task: _Totals, row: Mapping[str, str]) -> None:
        gpus = number(row["inst_num"]) * number(row["plan_gpu"]) / 100
        task.span(row["start_time"], row["end_time"])
        task.gpus += gpus
        task.by_type[row["gpu_type"].strip() or "?"] += gpus

    return _summed(path, "task", TASK_COLUMNS, add, dropped)


def _instance_spans(path: Path, dropped: Counter[str]) -> dict[str, _Totals]:
    """Each job's instance rows: the span of their times."""
    return _summed(path, "instance", INSTANCE_COLUMNS, lambda totals, row: totals.span(row["start_time"], row["end_time"]), dropped)


def _summed(
    path: Path, table: str, columns: tuple[str, ...], add: Callable[[_Totals, Mapping[str, str]], None], dropped: Counter[str]
) -> dict[str, _Totals]:
    """Per job name, ``add`` applied to each of its rows of the headerless ``table``. A row ``add`` cannot read (a
    ValueError, raised before it changes anything) is counted in ``dropped`` and changes nothing; a job whose only rows
    are unreadable has no entry (so it is dropped once, as having none)."""
    rows, bad = read_headerless(path, f"pai {table}", columns)
    dropped[f"unparsable {table} row"] += bad
    out: dict[str, _Totals] = {}
    for row in rows:
        name = row["job_name"]
        totals = out.get(name) or _Totals()
        try:
            add(totals, row)
        except ValueError:
            dropped[f"unparsable {table} row"] += 1
            continue
        out[name] = totals
    return out


def _workloads(path: Path) -> dict[str, str]:
    rows, _ = read_headerless(path, "pai group tag", TAG_COLUMNS)
    return {row["inst_id"]: row["workload"].strip() for row in rows if row["workload"].strip()}


def _job(row: Mapping[str, str], tasks: _Totals | None, instances: _Totals | None, workload: str | None) -> TraceJob | str:
    submit_s = float(row["start_time"]) + UTC8_S
    status = STATUS.get(row["status"].strip())
    if status is None:
        return "unknown status"
    if tasks is None:
        return "no task rows"
    run_s = instances.run_s if instances is not None and instances.run_s > 0 else tasks.run_s
    gpu_type = max(tasks.by_type, key=lambda t: tasks.by_type[t]) if tasks.by_type else None
    return TraceJob(
        submit_s=submit_s,
        gpus=tasks.gpus,
        duration_s=run_s,
        gpu_type=None if gpu_type in (None, "?") else gpu_type,
        name=workload,
        status=status,
    )


def parse(path: Path) -> Parsed:
    paths = tables(path)
    dropped = Counter[str]()
    jobs_rows, bad = read_headerless(paths["job"], "pai job", JOB_COLUMNS)
    dropped["unparsable"] += bad
    tasks = _add_tasks(paths["task"], dropped)
    instances = _instance_spans(paths["instance"], dropped) if paths["instance"].is_file() else {}
    workloads = _workloads(paths["tag"]) if paths["tag"].is_file() else {}
    parsed = parse_each(
        jobs_rows, lambda row: _job(row, tasks.get(row["job_name"]), instances.get(row["job_name"]), workloads.get(row["inst_id"]))
    )
    dropped.update(parsed.dropped)
    return Parsed(parsed.jobs, parsed.rows + bad, {k: n for k, n in dropped.items() if n})


FORMAT = TraceFormat(
    "pai",
    parse,
    JOB_COLUMNS,
    source="https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020",
    licence="no licence file; the repository's terms: use for research or study",
    clock_shift_s=UTC8_S,
)
