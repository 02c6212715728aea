"""Who won, in words: a line per row (policy) of ``placer report --against``'s paired tables.

A paired difference is *resolved* when its 95% interval over the streams excludes 0 (``|mean| > half``); one stream
(or a replayed trace) has no interval and resolves nothing.
"""

from __future__ import annotations

import math

WHAT = {"blocking_rate": "", "avoidable_blocking_rate": " of the avoidable jobs"}
LEGEND = "resolved: the paired 95% interval excludes 0"


def resolved(mean: float, half: float) -> bool:
    """Whether the paired interval ``mean ± half`` excludes 0 (NaN ``half``: no interval, never)."""
    return math.isfinite(half) and abs(mean) > half


def cell(mean: float, half: float) -> tuple[str, str]:
    """(``0.012 fewer`` | ``0.004 more`` | ``as many`` (0 to 3 places), ``resolved`` | ``not resolved``) for a paired
    ``policy - against``."""
    told = "as many" if round(mean, 3) == 0 else f"{abs(mean):.3f} {'fewer' if mean < 0 else 'more'}"
    return told, "resolved" if resolved(mean, half) else "not resolved"


def verdict_line(result, policy: str, against: str, metric: str = "blocking_rate") -> str:
    """One line for ``policy``'s row: its paired difference to ``against`` per beta distribution (pooled over the loads,
    as the table's cell) and, where several loads were evaluated for one beta distribution, per load first."""
    config = result.config
    betas = config.beta_labels
    loads = config.load_values if len(config.load_values) > 1 and len(betas) == 1 else ()
    cells = []
    for beta in betas:
        at = [f"beta {beta}"] if len(betas) > 1 else []
        for load in loads:
            cells.append((", ".join([*at, f"load {load}"]), *result.paired(policy, against, beta, metric, load)))
        cells.append((", ".join(at + (["all loads"] if loads else [])), *result.paired(policy, against, beta, metric)))
    what = WHAT.get(metric, f" ({metric})")
    if len(cells) == 1:
        told, res = cell(*cells[0][1:])
        return f"{policy} blocks {told}{what} than {against} ({res})"
    said = []
    for where, mean, half in cells:
        told, res = cell(mean, half)
        said.append(f"{where} {told} ({res})")
    return f"{policy} against {against}, blocking{what}: {'; '.join(said)}"


def verdict_lines(result, against: str, metric: str = "blocking_rate") -> list[str]:
    """A line per evaluated policy other than ``against`` (:func:`verdict_line`), then the legend."""
    lines = [verdict_line(result, policy, against, metric) for policy in result.config.policies if policy != against]
    return [*lines, f"({LEGEND}; one stream gives no interval)"] if lines else []
