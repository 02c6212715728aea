"""Measure the structure of the shipped Philly trace that the workload defaults are set from.

    python experiments/studies/trace_structure.py [--smoke]   # --smoke: the first 2,000 jobs only

Prints, for ``data/traces/philly_pollux.csv`` (Pollux's processed Philly trace): the hourly arrival
profile and the amplitude of ``1 + A cos`` fitted to it (``daily:amp``), a day in mean job durations
(``daily:period``), the share of jobs arriving within 10 s of the previous one and the mean size of
those bursts (``sweeps:share``, ``sweeps:size``), and the hourly counts' coefficient of variation
next to a Poisson stream's. The constants in :mod:`placer.workloads.structure` cite this output.
"""

from __future__ import annotations

import csv
import sys
from datetime import datetime

import numpy as np

from placer.common.shipped import data_dir

BURST_GAP_S = 10.0


def main() -> None:
    path = data_dir() / "traces" / "philly_pollux.csv"
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    if "--smoke" in sys.argv[1:]:
        rows = rows[:2000]
    times = np.sort([datetime.fromisoformat(r["timestamp"]).timestamp() for r in rows])
    durations = np.array([float(r["duration"]) for r in rows])
    print(f"{path.name}: {len(times):,} jobs over {(times[-1] - times[0]) / 86400:.1f} days")
    hours = ((times // 3600) % 24).astype(int)
    per_hour = np.bincount(hours, minlength=24) / np.bincount(hours, minlength=24).mean()
    print("arrivals per hour of day (UTC) / mean:", " ".join(f"{v:.2f}" for v in per_hour))
    t = np.arange(24)
    design = np.column_stack([np.ones(24), np.cos(2 * np.pi * t / 24), np.sin(2 * np.pi * t / 24)])
    _, a, b = np.linalg.lstsq(design, per_hour, rcond=None)[0]
    print(f"daily cycle: fitted amplitude {np.hypot(a, b):.2f}; busiest / quietest hour {per_hour.max() / per_hour.min():.1f}x")
    print(f"a day is {86400 / durations.mean():.1f} mean job durations ({durations.mean() / 3600:.2f} h)")
    gaps = np.diff(times)
    starts = np.r_[True, gaps > BURST_GAP_S]
    sizes = np.bincount(np.cumsum(starts))[1:]
    bursts = sizes[sizes >= 2]
    print(
        f"bursts (gaps <= {BURST_GAP_S:.0f} s): {bursts.sum() / len(times):.0%} of jobs, {bursts.mean():.1f} jobs each on average "
        f"({BURST_GAP_S / durations.mean():.5f} mean job durations)"
    )
    counts = np.bincount(((times - times[0]) // 3600).astype(int))
    print(f"hourly counts: coefficient of variation {counts.std() / counts.mean():.2f} (Poisson: {1 / np.sqrt(counts.mean()):.2f})")


if __name__ == "__main__":
    main()
