"""The observation's per-decision columns in compiled code: what :mod:`placer.envs.features` computed over arrays with
numpy, one numba kernel each, writing into the copy of the kept (static) rows that the caller passes.

Each kernel does the same float64 operations in the same order as the numpy expressions it replaces (sums in device
order, as ``np.bincount`` adds its weights; ``min``/``max`` as ``np.minimum``/``np.maximum``, NaN kept), and rounds to
float32 once, where the array assignment rounded: the same bits (``tests/envs/test_feature_kernels.py`` runs both).
At a decision they cost a call each instead of about twenty numpy calls.
"""

from __future__ import annotations

import numpy as np

from placer.sim.engine.jit import kernel

CAP = 4.0  # the features' clip: a ratio read as at most 4


def _at_most(x: float, bound: float) -> float:
    """``np.minimum(x, bound)``: ``x`` unless it is above ``bound`` (NaN stays NaN)."""
    return bound if x > bound else x


def _at_least(x: float, bound: float) -> float:
    """``np.maximum(x, bound)``: ``x`` unless it is below ``bound`` (NaN stays NaN, -0.0 stays -0.0)."""
    return bound if x < bound else x


def _minimum(a: float, b: float) -> float:
    """``np.minimum(a, b)``: NaN if either is, else the smaller (``a`` on a tie)."""
    return a if a <= b or np.isnan(a) else b


at_most, at_least, minimum = kernel(_at_most), kernel(_at_least), kernel(_minimum)


@kernel
def group_columns(
    free: np.ndarray,
    free_at: np.ndarray,
    now: float,
    time_left_s: float,
    group: np.ndarray,
    single: bool,
    used: int,
    starts: np.ndarray,
    safe: np.ndarray,
    out: np.ndarray,
) -> None:
    """Fill the server groups' per-decision columns of ``out`` ((max_groups, 6) float32, the kept static columns in it):
    0 the free fraction, 2 the mean and 3 the least of the busy devices' time until free / ``time_left_s`` (each
    min(., 4) / 4; 0 where none is busy), then clip all of ``out`` to [0, 4].

    ``free`` (n,) bool, ``free_at`` (n,) s; ``group`` (n,) each device's group (consecutive), ``single``: device d is
    group d, ``used``: the groups that hold devices, ``starts`` (used,) each one's first device, ``safe`` (max_groups,)
    its device count (at least 1)."""
    n, groups = free.shape[0], out.shape[0]
    if single:
        for d in range(n):
            busy_until = 0.0 if free[d] else at_most((free_at[d] - now) / time_left_s, CAP) / CAP
            out[d, 0] = 1.0 if free[d] else 0.0
            out[d, 2] = busy_until
            out[d, 3] = busy_until  # the least of one busy device is its value; a free one reads 0
    else:
        for g in range(groups):
            busy_count, busy_sum, free_sum = 0.0, 0.0, 0.0
            least = np.inf
            if g < used:
                end = starts[g + 1] if g + 1 < used else n
                for d in range(starts[g], end):  # the group's devices in order: np.bincount's order of addition
                    if free[d]:
                        free_sum += 1.0
                        busy_sum += 0.0
                    else:
                        until = at_most((free_at[d] - now) / time_left_s, CAP) / CAP
                        busy_count += 1.0
                        busy_sum += until
                        least = minimum(least, until)  # np.minimum.reduceat's order; a free device's inf changes nothing
            out[g, 0] = free_sum / safe[g]
            out[g, 2] = busy_sum / at_least(busy_count, 1.0)
            out[g, 3] = least if np.isfinite(least) else 0.0
    for g in range(groups):
        for k in range(out.shape[1]):
            out[g, k] = at_most(at_least(out[g, k], 0.0), CAP)


@kernel
def option_job_columns(
    rows: np.ndarray,
    fit: np.ndarray,
    degree: np.ndarray,
    iteration_s: np.ndarray,
    iterations: float,
    deadline_limit_s: float,
    left_s: float,
    sequential_s: float,
) -> None:
    """Fill the job's three columns of the fitting options' rows of ``rows`` ((O, 13) float32, the kept rows in it):
    for each ``fit[i]`` (its ``degree[i]`` and seconds per iteration ``iteration_s[i]``), JCT = iteration x
    ``iterations``; column 0 whether JCT <= ``deadline_limit_s``, 1 min(JCT / ``left_s``, 4) / 4, 2 min(degree x JCT
    / ``sequential_s``, 4) / 4."""
    for i in range(fit.shape[0]):
        o = fit[i]
        jct = iteration_s[i] * iterations
        rows[o, 0] = 1.0 if jct <= deadline_limit_s else 0.0
        rows[o, 1] = at_most(jct / left_s, CAP) / CAP
        rows[o, 2] = at_most(degree[i] * jct / sequential_s, CAP) / CAP
