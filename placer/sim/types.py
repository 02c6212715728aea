"""Plain value types shared by the simulator, policies and evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from placer.graphs.job_graph import JobGraph

DEADLINE_TOLERANCE = 1e-9  # relative: a completion this close to the deadline meets it (float rounding)


def meets_deadline(jct_s: float, deadline_s: float) -> bool:
    """True when a job that takes ``jct_s`` seconds from now meets a deadline ``deadline_s`` seconds from now."""
    return jct_s <= deadline_s * (1 + DEADLINE_TOLERANCE)


@dataclass(frozen=True)
class Job:
    """A job as it arrives: its graph, deadline fraction and training length."""

    job_id: int
    graph: JobGraph
    arrival_s: float
    beta: float  # deadline = beta x sequential JCT, in (0, 1]
    iterations: int
    sequential_jct_s: float
    fastest_jct_s: float = 0.0  # the shortest JCT any placement gives on an idle cluster (0: not computed)

    @property
    def deadline_s(self) -> float:
        """Maximum acceptable completion time in seconds after the arrival (waiting included)."""
        return self.beta * self.sequential_jct_s

    def remaining_s(self, now: float) -> float:
        """Seconds left at ``now`` for the job to run: its deadline minus the time it has waited."""
        return self.deadline_s - (now - self.arrival_s)

    @property
    def latest_start_s(self) -> float:
        """The last moment the job can start and still meet its deadline (absolute seconds)."""
        return self.arrival_s + self.deadline_s - self.fastest_jct_s


@dataclass(frozen=True)
class Reject:
    """Decline the job."""


@dataclass(frozen=True)
class Resize:
    """Move running job ``job_id`` onto ``devices`` (its degree is their number): its progress carries over, and it
    makes none for the pause its cluster's ``[resize]`` table prices (:mod:`placer.sim.elastic`)."""

    job_id: int
    devices: tuple[int, ...]


@dataclass(frozen=True)
class Place:
    """Run the job split ``degree`` ways, shard ``i`` on ``devices[i]``.

    ``resizes``: running jobs moved first, all at once (an elastic policy taking devices back to admit the job); only a
    simulator in elastic mode accepts them (:class:`~placer.sim.simulator.Simulator`'s ``rebalance``).
    """

    devices: tuple[int, ...]
    resizes: tuple[Resize, ...] = ()

    @property
    def degree(self) -> int:
        return len(self.devices)


Decision = Reject | Place


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    BLOCKED = "blocked"


class BlockReason(StrEnum):
    """Why a job was blocked; :attr:`meaning` says it in words."""

    REJECTED = "rejected"
    NO_CAPACITY = "no_capacity"
    OUT_OF_MEMORY = "out_of_memory"
    DEADLINE = "deadline"
    QUEUE_FULL = "queue_full"
    EXPIRED = "expired"

    @property
    def meaning(self) -> str:
        return _BLOCK_MEANING[self]


_BLOCK_MEANING = {
    BlockReason.REJECTED: "the policy declined",
    BlockReason.NO_CAPACITY: "devices busy, unknown, repeated, or too few",
    BlockReason.OUT_OF_MEMORY: "a shard does not fit on its device",
    BlockReason.DEADLINE: "predicted JCT over beta x sequential JCT, less the time waited",
    BlockReason.QUEUE_FULL: "no waiting place left",
    BlockReason.EXPIRED: "waited until its deadline could no longer be met",
}


@dataclass(frozen=True)
class JobRecord:
    """What happened to one job. ``jct_s``/``finish_s`` are None for blocked jobs."""

    job_id: int
    graph: str
    arrival_s: float
    beta: float
    iterations: int
    sequential_jct_s: float
    deadline_s: float
    outcome: Outcome
    reason: BlockReason | None
    degree: int
    devices: tuple[int, ...]
    jct_s: float | None
    finish_s: float | None
    strategy: str | None = None  # the cost model's split (e.g. "dp4-tp2-pp1"), accepted jobs only
    servers: int = 0  # servers the placement spans (0 when blocked)
    wait_s: float = 0.0  # seconds between arrival and start (or leaving the queue)
    fastest_jct_s: float | None = None  # the shortest JCT any placement gives on the idle cluster (inf: fits nowhere; None: unknown)
    avoidable: bool = True  # that fastest placement, started at arrival, meets the deadline: some policy could accept the job
    resizes: int = 0  # times an elastic policy changed its devices while it ran (degree and devices above: where it started)
    resize_pause_s: float = 0.0  # seconds those resizes paused it (checkpoint, restart, re-shard), inside jct_s
    resized_device_s: float | None = None  # device-seconds it held from start to finish when resized (None: degree x jct_s)

    @property
    def device_seconds(self) -> float | None:
        """Device-seconds the job held from start to finish (None when it was blocked)."""
        if self.resized_device_s is not None:
            return self.resized_device_s
        return self.degree * self.jct_s if self.jct_s is not None else None

    def __deepcopy__(self, memo: dict) -> JobRecord:
        """Itself: every field is immutable (vector envs deep-copy each step's ``info``, which holds records)."""
        return self

    def to_dict(self) -> dict:
        return {
            **{k: getattr(self, k) for k in self.__dataclass_fields__},
            "outcome": self.outcome.value,
            "reason": self.reason.value if self.reason else None,
            "devices": list(self.devices),
        }
