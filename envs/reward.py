"""Rewards for one decided job."""

from __future__ import annotations

from placer.sim.types import JobRecord, Outcome

REWARDS = ("acceptance", "work")


def reward(kind: str, record: JobRecord, mean_sequential_jct_s: float) -> float:
    """``acceptance``: +1 accepted, -1 blocked. ``work``: +/- sequential JCT / the mix's mean."""
    sign = 1.0 if record.outcome is Outcome.ACCEPTED else -1.0
    if kind == "acceptance":
        return sign
    if kind == "work":
        return sign * record.sequential_jct_s / mean_sequential_jct_s
    raise ValueError(f"unknown reward {kind!r} (choose from {', '.join(REWARDS)})")
