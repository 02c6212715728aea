"""``evaluate(config)``: every run of an evaluation, here or spread over processes or a Ray cluster."""

from __future__ import annotations

from collections.abc import Callable

from placer.evaluate.config import EvaluationConfig
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
) -> EvaluationResult:
    """Run every (beta distribution, seed, policy).

    ``workers`` > 1 spreads the runs over that many local processes, ``ray_address`` over a Ray
    cluster (``"local"`` starts one here); the results are the same as a serial run's, in the
    same order. ``on_job`` ticks once per job settled (serial runs only); ``on_task(jobs)`` once
    per finished run, with its number of jobs.
    """
    todo = tasks(config)
    if ray_address is not None or workers > 1:
        outputs = run_tasks(config, todo, workers=workers, ray_address=ray_address, on_task=on_task)
    else:
        runner = Runner(config)
        outputs = []
        for task in todo:
            outputs.append(runner.run(task, on_job))
            if on_task is not None:
                on_task(outputs[-1][0]["jobs"])
    result = EvaluationResult(config)
    for summary, timeline in outputs:
        result.runs.append(summary)
        result.timelines.append(timeline)
    return result
