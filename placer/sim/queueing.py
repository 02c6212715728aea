"""The waiting queue: how many jobs may wait, in which order they are offered, and backfilling.

A job that cannot (or should not) start on arrival may wait for devices, as long as its deadline
can still be met. Spec strings (``placer evaluate --queue``)::

    none            PAC-ML's loss system: a job starts on arrival or is blocked
    edf             earliest absolute deadline first, head of line (the first held job stops the round)
    edf-bf          the same with backfilling: every waiting job is offered in order
    fifo, sjf, ...  arrival order; smallest sequential JCT first
    edf-bf:16       with 16 waiting places (default 32)

At each decision point (an arrival or a completion, with a device free) the simulator offers the
waiting jobs one by one in the discipline's order; a policy starts each or holds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from placer.common.errors import WorkloadError
from placer.sim.types import Job

DISCIPLINES = ("fifo", "edf", "sjf")
DEFAULT_CAPACITY = 32


@dataclass(frozen=True)
class QueueConfig:
    """``capacity`` waiting places (0: the loss system); offer order ``discipline``; ``backfill``."""

    capacity: int = 0
    discipline: str = "edf"
    backfill: bool = True

    def __post_init__(self) -> None:
        if self.capacity < 0:
            raise WorkloadError(f"queue capacity must be >= 0, got {self.capacity}")
        if self.discipline not in DISCIPLINES:
            raise WorkloadError(f"unknown queue discipline {self.discipline!r} (choose from {', '.join(DISCIPLINES)})")

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    @property
    def spec(self) -> str:
        if not self.enabled:
            return "none"
        return f"{self.discipline}{'-bf' if self.backfill else ''}:{self.capacity}"

    @classmethod
    def parse(cls, spec: str) -> QueueConfig:
        """``none``, ``DISC``, ``DISC-bf``, optionally ``:CAPACITY`` (see the module docstring)."""
        if spec == "none":
            return cls()
        name, _, capacity = spec.partition(":")
        discipline, dash, flag = name.partition("-")
        if (dash and flag != "bf") or discipline not in DISCIPLINES or (capacity and not capacity.isdigit()):
            raise WorkloadError(f"bad queue {spec!r}: use none, or fifo, edf or sjf, optionally -bf (backfilling) and :CAPACITY")
        size = int(capacity) if capacity else DEFAULT_CAPACITY
        if size < 1:
            raise WorkloadError(f"bad queue {spec!r}: capacity must be >= 1 (use none for the loss system)")
        return cls(size, discipline, bool(dash))

    def order(self, waiting: Iterable[Job]) -> list[Job]:
        """``waiting`` in offer order; ties keep arrival order."""
        jobs = sorted(waiting, key=lambda j: j.job_id)
        if self.discipline == "edf":
            return sorted(jobs, key=lambda j: j.arrival_s + j.deadline_s)
        if self.discipline == "sjf":
            return sorted(jobs, key=lambda j: j.sequential_jct_s)
        return jobs
