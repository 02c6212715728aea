"""Evaluation runs spread over local processes or a Ray cluster, with the same results as in one process.

An evaluation is a list of independent :class:`~placer.evaluate.Task` s (distribution x seed x
policy). Each worker builds the evaluation once (:class:`~placer.evaluate.Runner`: cluster,
graphs, policies, cost model with its caches) and runs the tasks it is given; results come back
in task order, so ``results.json`` is byte for byte what a serial run writes.

On a multi-node Ray cluster (every node with this package and its data installed)::

    ray start --head --port 6379                 # on the head node
    ray start --address HEAD_IP:6379             # on every other node
    placer evaluate ... --ray HEAD_IP:6379       # anywhere that reaches the head node

``--ray local`` starts a Ray instance on this machine; ``--workers N`` uses a local process pool
without Ray.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from placer.common.pool import results_in_order
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.jobs import Row
from placer.evaluate.runner import Runner, Task

_RUNNERS: dict[str, Runner] = {}


def _run(config_json: str, task: Task, jobs: bool = False) -> tuple[dict, dict] | tuple[dict, dict, list[Row]]:
    """Run one task in a worker, building (and keeping) the evaluation's runner on first use; ``jobs``: with its rows
    of the per-job table."""
    runner = _RUNNERS.get(config_json)
    if runner is None:
        config = EvaluationConfig.model_validate_json(config_json)
        shared = [r.cost for r in _RUNNERS.values() if (r.config.cluster, r.config.strategy) == (config.cluster, config.strategy)]
        _RUNNERS.clear()  # one evaluation at a time per worker; the last one's cost model kept if this one's cluster is its
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        _one_torch_thread()
        runner = _RUNNERS[config_json] = Runner(config, cost=shared[0] if shared else None)
    return runner.run_jobs(task) if jobs else runner.run(task)


def _one_torch_thread() -> None:
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)  # one process per core: threads would only contend


def run_tasks(
    config: EvaluationConfig,
    todo: Sequence[Task],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    on_task: Callable[[int], None] | None = None,
    on_jobs: Callable[[list[Row]], None] | None = None,
) -> list[tuple[dict, dict]]:
    """Every task's (run summary, timelines), in the order of ``todo``, over ``workers`` processes or, given
    ``ray_address``, Ray tasks on that cluster; ``on_jobs`` gets each task's rows of the per-job table in that order, as
    they come (not kept: :mod:`placer.evaluate.jobs`)."""
    groups = [(config, todo)]
    return next(run_task_groups(groups, workers=workers, ray_address=ray_address, on_task=on_task, on_jobs=on_jobs))


def run_task_groups(
    groups: Sequence[tuple[EvaluationConfig, Sequence[Task]]],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    on_task: Callable[[int], None] | None = None,
    on_jobs: Callable[[list[Row]], None] | None = None,
) -> Iterator[list[tuple[dict, dict]]]:
    """:func:`run_tasks` of each (evaluation, tasks) of ``groups`` in turn, yielded as each group's tasks are done, every
    group's tasks queued at once on one pool of ``workers`` processes (or on the Ray cluster at ``ray_address``): a
    worker's caches (a cluster's prices) serve every evaluation it runs, and none idles at one group's last task while
    another group's wait. The same outputs as one :func:`run_tasks` a group."""
    rows = on_jobs is not None
    calls = [(json, task, rows) for json, todo in ((config.model_dump_json(), todo) for config, todo in groups) for task in todo]
    with results_in_order(_run, calls, workers=workers, ray=ray_address) as results:
        for _, todo in groups:
            yield _collect(itertools.islice(results, len(todo)), on_task, on_jobs)


def _collect(results: Iterable[tuple], on_task, on_jobs) -> list[tuple[dict, dict]]:
    """(summary, timelines) of each of ``results``, the per-job rows handed to ``on_jobs`` and not kept."""
    outputs = []
    for summary, timeline, *rows in results:
        outputs.append((summary, timeline))
        if on_jobs is not None:
            on_jobs(rows[0])
        if on_task is not None:
            on_task(summary["jobs"])
    return outputs
