"""``evaluate(config)``: every run of an evaluation, here or spread over processes or a Ray cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from placer.evaluate.config import EvaluationConfig
from placer.evaluate.identity import policy_files
from placer.evaluate.jobs import JobsWriter
from placer.evaluate.parallel import run_tasks
from placer.evaluate.results import EvaluationResult
from placer.evaluate.runner import Runner, tasks


def evaluate(
    config: EvaluationConfig,
    on_job: Callable[[], None] | None = None,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    on_task: Callable[[int], None] | None = None,
    jobs: Path | None = None,
) -> EvaluationResult:
    """Run every (beta distribution, seed, policy).

    ``workers`` > 1 spreads the runs over that many local processes, ``ray_address`` over a Ray
    cluster (``"local"`` starts one here); the results are the same as a serial run's, in the
    same order. ``on_job`` ticks once per job settled (serial runs only); ``on_task(jobs)`` once
    per finished run, with its number of jobs. ``jobs``: write the per-job table there (``jobs.csv``, run
    by run, in place once every run is done: :mod:`placer.evaluate.jobs`); the result's ``jobs`` names it.
    The policy files read are hashed first (the result's ``policy_files``).
    """
    todo = tasks(config)
    files = policy_files(config)
    with JobsWriter(jobs, config.policies) if jobs is not None else contextlib.nullcontext() as writer:
        on_jobs = writer.write if writer is not None else None
        if ray_address is not None or workers > 1:
            outputs = run_tasks(config, todo, workers=workers, ray_address=ray_address, on_task=on_task, on_jobs=on_jobs)
        else:
            runner = Runner(config)
            outputs = []
            for task in todo:
                if on_jobs is not None:
                    summary, timeline, rows = runner.run_jobs(task, on_job)
                    on_jobs(rows)
                else:
                    summary, timeline = runner.run(task, on_job)
                outputs.append((summary, timeline))
                if on_task is not None:
                    on_task(summary["jobs"])
    result = EvaluationResult(config, policy_files=files)
    if writer is not None and writer.table is not None:
        result.jobs.append(writer.table)
    for summary, timeline in outputs:
        result.runs.append(summary)
        result.timelines.append(timeline)
    return result
