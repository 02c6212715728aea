"""Measurements that do not fit the cluster they are calibrated against: a warning, not a refusal.

A calibration against the wrong preset (rows measured on H100s or T4s, fitted to ``dgx8x8``'s A100s) runs: the
rows name devices the preset has, and the fit absorbs a wrong device type into its per-job compute scales and a
wrong network into its bandwidths, in-sample errors small. Two signs give it away:

- the preset's nominal constants predict the median row :data:`FAR_OFF` times too fast or too slow (a right preset's
  nominal error is typically 1.5-2x: 1.6-2.1x on Gavel's K80, P100 and V100 rows against their testbed files, 1.8x
  on the synthetic testbed; the wrong GPU type or cluster 7x);
- where rows repeat a measurement (same job, placement shape and split), the fit's errors are far above their spread:
  the constants cannot explain what the measurements agree on.

(Devices the preset lacks are refused when the rows are read: ``unknown device``.)
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from placer.calibration.measurements import Row
from placer.calibration.result import Calibration
from placer.cluster.topology import Cluster

FAR_OFF = 4.0  # the median row's nominal prediction this many times off: measured on something else
SPREAD_FACTOR = 3.0  # the fit's 90th-percentile error this many times the repeats' spread ...
MIN_FIT_ERROR = 0.05  # ... and above 5 %


def preset_warnings(cluster: Cluster, rows: list[Row], calibration: Calibration) -> list[str]:
    """One line per sign (module docstring) that ``rows`` were not measured on ``cluster``; empty when none shows."""
    lines = []
    ratio = float(np.exp(np.median(np.log1p(calibration.nominal_errors))))  # predicted / measured, the median row
    if not FAR_OFF**-1 < ratio < FAR_OFF:
        types = sorted({cluster.device_type[d] for row in rows for d in row.devices})
        pace = f"{1 / ratio:.1f}x slower" if ratio < 1 else f"{ratio:.1f}x faster"
        lines.append(
            f"the measurements run {pace} than {cluster.name}'s nominal constants predict (median row): were they taken on "
            f"{cluster.name}'s {', '.join(types)}? Fitted to another device type or network, the constants mean nothing"
        )
    spread = repeat_spread(cluster, rows)
    fit_error = float(np.percentile(np.abs(calibration.errors), 90))
    if spread is not None and fit_error > max(SPREAD_FACTOR * spread, MIN_FIT_ERROR):
        lines.append(
            f"the fit misses by {fit_error:.1%} (90th percentile), far above the {spread:.1%} by which repeated measurements "
            f"differ: {cluster.name}'s devices and network cannot explain the rows (measured on another cluster?)"
        )
    return lines


def repeat_spread(cluster: Cluster, rows: list[Row]) -> float | None:
    """The 90th percentile of each repeated row's step time relative to its repeats' mean, minus 1 (absolute); None when
    no measurement repeats (same job, placement shape, device types and split)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        shape = tuple(sorted(Counter(int(cluster.server_of[d]) for d in row.devices).values()))
        types = tuple(sorted(cluster.device_type[d] for d in row.devices))
        groups[(row.graph.key, shape, types, row.strategy)].append(row.step_time_s)
    deviations = [abs(t / (sum(ts) / len(ts)) - 1) for ts in groups.values() if len(ts) > 1 for t in ts]
    return float(np.percentile(deviations, 90)) if deviations and math.isfinite(max(deviations)) else None
