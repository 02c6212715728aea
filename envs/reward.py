"""Rewards for one decided job: one scalar per job, summed over the jobs settled at a step.

- ``acceptance`` (PAC-ML's): +1 accepted, -1 blocked.
- ``work``: +/- the job's sequential JCT over the mix's mean (throughput-weighted acceptance).
- ``mission``: what the project is judged on, in order. A job no policy could accept (``record.avoidable``
  False: not even the fastest placement on the idle cluster meets its deadline, decided by the simulator at
  arrival) gives 0, so the reward carries none of that noise; an avoidable job blocked gives -1; an
  accepted job gives ``1 - SLOWDOWN_WEIGHT * (1 - fastest / (wait + JCT))``, between 0.9 and 1: it pays to
  finish close to the fastest possible completion, but ten of the slowest completions cost less than one
  block. Throughput follows from acceptance (every accepted job completes by its deadline) and from
  the device-time an accepted job leaves to later ones, which the return counts through their acceptance.
"""

from __future__ import annotations

import math

from placer.sim.types import JobRecord, Outcome

REWARDS = ("acceptance", "work", "mission")
SLOWDOWN_WEIGHT = 0.1  # the most an accepted job's completion time can cost, in blocked jobs


def reward(kind: str, record: JobRecord, mean_sequential_jct_s: float) -> float:
    """The reward ``kind`` (module docstring) for one settled job; ``mean_sequential_jct_s`` (s) scales ``work``."""
    accepted = record.outcome is Outcome.ACCEPTED
    sign = 1.0 if accepted else -1.0
    if kind == "acceptance":
        return sign
    if kind == "work":
        return sign * record.sequential_jct_s / mean_sequential_jct_s
    if kind == "mission":
        if not record.avoidable:
            return 0.0
        if not accepted:
            return -1.0
        return 1.0 - SLOWDOWN_WEIGHT * (1.0 - _speed(record))
    raise ValueError(f"unknown reward {kind!r} (choose from {', '.join(REWARDS)})")


def _speed(record: JobRecord) -> float:
    """fastest possible JCT / (wait + JCT), in (0, 1]; 1 when the fastest is unknown."""
    fastest, took = record.fastest_jct_s, record.wait_s + (record.jct_s or 0.0)
    if fastest is None or not math.isfinite(fastest) or took <= 0:
        return 1.0
    return min(1.0, fastest / took)
