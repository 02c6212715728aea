"""Policies by name: the heuristics, plus plug-ins (the learned policy) found by entry point.

A plug-in registers under the entry-point group ``placer.policies``; its callable takes
``(spec, PolicyContext)`` and returns an object with ``reset(rng)`` and ``decide(job, view)``.
This keeps ``placer`` free of torch: the learned policy lives in ``policies``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol

import numpy as np

from placer.baselines.specs import make_heuristic
from placer.cluster.topology import Cluster
from placer.common.errors import PolicyError, WorkloadError
from placer.sim.options import DEFAULT_MAX_DEGREE
from placer.sim.queueing import QueueConfig
from placer.sim.simulator import ClusterView
from placer.sim.types import Decision, Job

ENTRY_POINT_GROUP = "placer.policies"


class Policy(Protocol):
    name: str

    def reset(self, rng: np.random.Generator) -> None: ...

    def decide(self, job: Job, view: ClusterView) -> Decision: ...


@dataclass(frozen=True)
class PolicyContext:
    cluster: Cluster
    max_degree: int = DEFAULT_MAX_DEGREE
    policy_file: Path | None = None


def plugin_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def make_policy(spec: str, context: PolicyContext) -> Policy:
    """A policy from its name: a heuristic (see :mod:`placer.baselines.heuristics`) or a plug-in, optionally ``@DISCIPLINE``."""
    spec, at, discipline = spec.partition("@")
    if at:
        try:
            QueueConfig.parse(discipline)
        except WorkloadError:
            message = f"bad queue discipline {discipline!r} in {spec + at + discipline!r}: use fifo, edf or sjf, optionally -bf"
            raise PolicyError(message) from None
    policy = _make(spec, context)
    if at:
        policy.discipline = discipline
        policy.name = f"{spec}@{discipline}"
    return policy


def queue_for(policy: Policy, queue: QueueConfig) -> QueueConfig:
    """The queue a run of ``policy`` uses: ``queue`` with the policy's own discipline, if it names one."""
    discipline = getattr(policy, "discipline", None)
    if not discipline or not queue.enabled:
        return queue
    own = QueueConfig.parse(discipline)
    return QueueConfig(queue.capacity, own.discipline, own.backfill)


def _make(spec: str, context: PolicyContext) -> Policy:
    base = spec.partition("+")[0].partition(":")[0]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == base:
            try:
                factory = ep.load()
            except ImportError as exc:
                raise PolicyError(f"policy {spec!r} needs optional packages: {exc} (pip install -e '.[all]')") from None
            return factory(spec, context)
    try:
        return make_heuristic(spec, max_degree=context.max_degree)
    except PolicyError as exc:
        plugins = plugin_names()
        raise PolicyError(f"{exc}{'; plug-ins: ' + ', '.join(plugins) if plugins else ''}") from None
