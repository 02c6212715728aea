"""A calibration's outcome: the calibrated cluster, what it rests on, and the report a calibrated cluster file carries."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from placer.cluster.topology import Cluster


@dataclass(frozen=True)
class Calibration:
    """A fit's outcome: the calibrated cluster and what it rests on.

    ``fitted``: path -> (nominal, fitted); ``kept``: path -> why it stayed nominal; ``errors`` and
    ``cv_errors``: per row, predicted / measured - 1, in-sample and cross-validated (``cv_method``);
    ``identified``: path -> ``"rows"`` or ``"prior"`` (which set it); ``at_bound``: path -> ``"lower"``
    / ``"upper"`` for constants on a bound; ``shapes``: the placement shapes calibrated on (counts
    of devices per server, largest first).
    """

    cluster: Cluster
    source: str
    rows: int
    fitted: dict[str, tuple[float, float]]
    kept: dict[str, str]
    errors: np.ndarray
    cv_errors: np.ndarray
    cv_method: str
    nominal_errors: np.ndarray
    identified: dict[str, str] = field(default_factory=dict)
    at_bound: dict[str, str] = field(default_factory=dict)
    shapes: tuple[tuple[int, ...], ...] = ()
    notes: tuple[str, ...] = ()

    def constant_line(self, path: str) -> str:
        """``path = nominal -> fitted (from the rows | from the prior)[, at its upper bound]``."""
        nominal, fitted = self.fitted[path]
        source = {
            "rows": "from the rows: they narrow it to under half its prior's width",
            "prior": "from the prior: the rows cannot tell it from the other constants",
        }.get(self.identified.get(path, ""), "")
        bound = f", AT ITS {self.at_bound[path].upper()} BOUND" if path in self.at_bound else ""
        note = f" ({source}{bound})" if source or bound else ""
        return f"  {path} = {nominal:.4g} -> {fitted:.4g}{note}"

    @property
    def max_servers(self) -> int:
        """The most servers any calibration row spans (predictions beyond it extrapolate)."""
        return max((len(s) for s in self.shapes), default=0)

    def report(self) -> list[str]:
        """The comment block a calibrated cluster file carries: what was fitted, from what, and how well."""
        lines = [
            f"Calibrated by `placer calibrate` from {self.rows} measured step time(s) in {self.source}.",
            "Fitted (nominal -> fitted):",
        ]
        lines += [self.constant_line(path) for path in self.fitted]
        return lines + self.outcome()

    def outcome(self) -> list[str]:
        """What stayed as given, and the errors before and after (the report's tail)."""
        lines = ["Kept as given:", *(f"  {path}: {why}" for path, why in self.kept.items())] if self.kept else []
        lines.append(
            f"Relative error of step time (median / 90th percentile): nominal {_stats(self.nominal_errors)}, fitted {_stats(self.errors)}"
        )
        if self.cv_method != "none":
            lines.append(f"  cross-validated, {self.cv_method}: {_stats(self.cv_errors)}")
            if np.median(np.abs(self.cv_errors)) > np.median(np.abs(self.nominal_errors)):
                lines.append("  WARNING: the cross-validated error is worse than the nominal constants': the fit does not extrapolate")
        lines += list(self.notes)
        if self.at_bound:
            lines.append(f"On a bound (the rows want more than the bounds allow): {', '.join(sorted(self.at_bound))}")
        return lines


def _stats(errors: np.ndarray) -> str:
    values = np.abs(errors)
    return f"{np.median(values):.1%} / {np.percentile(values, 90):.1%}"
