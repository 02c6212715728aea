"""Means with 95% confidence intervals (Student's t) over seeds."""

from __future__ import annotations

import math
from collections.abc import Sequence

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of its 95% interval (NaN where undefined: no value, or a single one)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(values) / n
    if n == 1:
        return mean, math.nan
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.960
    return mean, t * sd / math.sqrt(n)


def plus_minus(mean: float, half: float, spec: str = ".3f") -> str:
    """``"0.182 ± 0.021"``; ``"0.182 ± n/a"`` where the interval is undefined (one seed)."""
    return f"{mean:{spec}} ± " + ("n/a" if math.isnan(half) else f"{half:{spec}}")


def per_hour_spec(rate: float) -> str:
    """The format of a rate per hour: one decimal from 1/h up, three below (a trace's weeks-long window serves a few
    hundredths of a job an hour, which one decimal would show as 0.0)."""
    return ".1f" if abs(rate) >= 1 or rate == 0 else ".3f"


def per_hour(mean: float, half: float) -> str:
    """:func:`plus_minus` of a rate per hour (:func:`per_hour_spec`)."""
    return plus_minus(mean, half, per_hour_spec(mean))


def clipped_errors(means: Sequence[float], halves: Sequence[float], low: float, high: float) -> list[list[float]]:
    """Asymmetric error bars (below, above) that stop at ``low`` and ``high`` (a rate stays in [0, 1]); NaN draws none."""
    below = [min(h, m - low) if not math.isnan(h) else 0.0 for m, h in zip(means, halves, strict=True)]
    above = [min(h, high - m) if not math.isnan(h) else 0.0 for m, h in zip(means, halves, strict=True)]
    return [below, above]
