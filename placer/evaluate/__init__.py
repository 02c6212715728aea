"""Offline evaluation: every policy on the same job streams (common random numbers), run here,
over processes or on Ray; results, paired statistics, reports and plots.

Modules: :mod:`~placer.evaluate.config` (what runs), :mod:`~placer.evaluate.runner` (one run),
:mod:`~placer.evaluate.parallel` (many, spread), :mod:`~placer.evaluate.run` (``evaluate``),
:mod:`~placer.evaluate.results`, :mod:`~placer.evaluate.merge`, :mod:`~placer.evaluate.jobs` (the per-job table),
:mod:`~placer.evaluate.identity` (the policy files, hashed), :mod:`~placer.evaluate.stats`, :mod:`~placer.evaluate.plots`.
"""

from placer.evaluate.config import EvaluationConfig, total_decisions
from placer.evaluate.merge import merge_results
from placer.evaluate.results import EvaluationResult, read_results, write_results
from placer.evaluate.run import evaluate
from placer.evaluate.runner import Runner, Task, tasks

__all__ = [
    "EvaluationConfig",
    "EvaluationResult",
    "Runner",
    "Task",
    "evaluate",
    "merge_results",
    "read_results",
    "tasks",
    "total_decisions",
    "write_results",
]
