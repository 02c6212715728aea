"""The work arrays one option table is built in (:func:`~placer.sim.engine.options.build_table`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Work(NamedTuple):
    """One decision's option table (``R x D`` options, degree-major) and the free devices it was built on."""

    ids: np.ndarray
    place: np.ndarray
    run_start: np.ndarray
    run_count: np.ndarray
    order: np.ndarray  # the runs most free first (best_fit's fill order)
    take: np.ndarray  # each run's share of a placement
    scratch: np.ndarray
    pos: np.ndarray
    deg: np.ndarray
    valid: np.ndarray
    repeat: np.ndarray
    shape: np.ndarray
    jct: np.ndarray
    fits: np.ndarray
    meta: np.ndarray  # the table's (free version, degree limit, rules, rule code, options) it was built for


def work_arrays(n_devices: int, width: int, n_rules: int) -> Work:
    """Empty work arrays for tables of up to ``width`` devices x ``n_rules`` rules on ``n_devices`` devices."""
    m, i8 = width * n_rules, np.int64
    return Work(
        ids=np.zeros(n_devices, dtype=i8),
        place=np.zeros(n_devices, dtype=i8),
        run_start=np.zeros(n_devices, dtype=i8),
        run_count=np.zeros(n_devices, dtype=i8),
        order=np.zeros(n_devices, dtype=i8),
        take=np.zeros(n_devices, dtype=i8),
        scratch=np.zeros(max(width, 1), dtype=i8),
        pos=np.zeros((m, max(width, 1)), dtype=i8),
        deg=np.zeros(m, dtype=i8),
        valid=np.zeros(m, dtype=np.bool_),
        repeat=np.zeros(m, dtype=np.bool_),
        shape=np.zeros(m, dtype=i8),
        jct=np.zeros(m),
        fits=np.zeros(m, dtype=np.bool_),
        meta=np.full(5, -1, dtype=i8),
    )
