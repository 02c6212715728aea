"""The cost model's value types: how a job is split (:class:`Strategy`) and what one iteration costs (:class:`Prediction`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Strategy:
    """How a job is split: ``dp x tp x pp`` ranks, or PAC-ML's op splitting ``sipml`` ways."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    sipml: bool = False

    @property
    def degree(self) -> int:
        return self.dp * self.tp * self.pp

    def as_dict(self) -> dict[str, int]:
        return {"sipml": self.dp} if self.sipml else {"dp": self.dp, "tp": self.tp, "pp": self.pp}

    @property
    def label(self) -> str:
        return f"sipml{self.dp}" if self.sipml else f"dp{self.dp}-tp{self.tp}-pp{self.pp}"


@dataclass(frozen=True)
class Prediction:
    """One iteration of a job on a placement (seconds, bytes)."""

    iteration_s: float
    strategy: Strategy | None  # None: no strategy applies (e.g. tp across servers)
    memory_per_device_bytes: float
    memory_capacity_bytes: float
    comm_s: float
    data_loading_s: float
    micro_batches: int = 1

    @property
    def fits(self) -> bool:
        return self.strategy is not None and self.memory_per_device_bytes <= self.memory_capacity_bytes

    def to_dict(self) -> dict:
        return {
            "iteration_s": self.iteration_s,
            "strategy": self.strategy.as_dict() if self.strategy else None,
            "memory_per_device_bytes": self.memory_per_device_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits": self.fits,
            "comm_s": self.comm_s,
            "data_loading_s": self.data_loading_s,
            "micro_batches": self.micro_batches,
        }
