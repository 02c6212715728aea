"""Who won, in words: a line per row of ``placer report --against``'s paired tables.

A paired difference is *resolved* when its 95% interval over the streams excludes 0 (``|mean| > half``); one stream
(or a replayed trace) has no interval and resolves nothing.
"""

from __future__ import annotations

import math

WHAT = {"blocking_rate": "", "avoidable_blocking_rate": " of the avoidable jobs"}


def verdict(policy: str, against: str, mean: float, half: float, where: str, metric: str = "blocking_rate") -> str:
    """``policy blocks D fewer|more than against WHERE (resolved: ...)`` for a paired mean ``policy - against``
    and its 95% half-width ``half`` (NaN: no interval)."""
    what = WHAT.get(metric, f" ({metric})")
    if mean == 0:
        told = f"{policy} blocks as many{what} as {against}{where}"
    else:
        told = f"{policy} blocks {abs(mean):.3f} {'fewer' if mean < 0 else 'more'}{what} than {against}{where}"
    if not math.isfinite(half):
        return f"{told} (not resolved: one stream gives no interval)"
    if abs(mean) > half:
        return f"{told} (resolved: the 95% interval excludes 0)"
    return f"{told} (not resolved: the 95% interval {mean - half:+.3f} to {mean + half:+.3f} holds 0)"


def verdict_lines(result, against: str, metric: str = "blocking_rate") -> list[str]:
    """A line per (policy, beta distribution) other than ``against``: pooled over the loads (the paired table's row),
    and, where several loads were evaluated, one per load before it."""
    config = result.config
    loads = config.load_values if len(config.load_values) > 1 else ()
    several_betas = len(config.beta_labels) > 1
    lines = []
    for policy in config.policies:
        if policy == against:
            continue
        for beta in config.beta_labels:
            at = f", beta {beta}" if several_betas else ""
            for load in loads:
                mean, half = result.paired(policy, against, beta, metric, load)
                lines.append(verdict(policy, against, mean, half, f" at load {load}{at}", metric))
            pooled = f" over loads {', '.join(map(str, loads))}{at}" if loads else at
            lines.append(verdict(policy, against, *result.paired(policy, against, beta, metric), pooled, metric))
    return lines
