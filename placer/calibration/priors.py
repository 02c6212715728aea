"""What a fit believes before it sees rows: each constant's prior, its bounds, and what the rows then identified.

The fit is MAP in the fitted units (log for rates and latencies, seconds for overheads): data
residuals ``log(predicted) - log(measured)`` with a soft-L1 loss of scale :data:`NOISE` (5 %),
plus one Gaussian prior residual per constant, ``NOISE * (x - x_nominal) / sigma``. The priors'
widths say which explanation a fit prefers where the rows cannot tell two apart:

=========================  ==============  ===============================================
constant                   prior (sigma)   why
=========================  ==============  ===============================================
link efficiency            log, 2.5        ordinary networks reach a small, unknown fraction of line rate
(or bandwidth)                             (TCP sockets on Ethernet: a tenth to a half; centred on the link
                                           kind's default, ``LINK_EFFICIENCY``; a file not opted into the
                                           communication terms fits the bandwidth, centred on its line rate)
link latency               log, 1.0        a link type's per-message latency is known to within a few x
gradient overlap           linear, 0.5     DDP hides all but the last buckets on an idle GPU, less when
                                           communication contends with compute: anywhere in [0, 1]
device / job compute rate  log, 2.0        efficiencies vary widely between codes
``sync_s``, ``iteration_s``  linear, 0.1 s   per-step overheads are milliseconds to a tenth of a second
=========================  ==============  ===============================================

Weak enough to move: each row a fit misses by 2x costs about 26 (the soft-L1 of ``(log 2 / NOISE)^2``,
in the units of ``problem.Problem.data_cost``), while moving the overlap from 1 to 0 costs 4 of prior and an
efficiency 10x below its default about 0.85: rows showing a 2x cross-server slowdown move both.

So a cross-server cost seen only on 2-server rows (where ``2 L`` per message and ``S / B`` per
byte are nearly collinear: a graph's buckets grow with its bytes) is explained by efficiency (bandwidth), which
scales as ring and tree all-reduce do (``2 (k - 1) / k``, bounded), not by latency, which grows
with every added server. A latency is also bounded to its link type's physical range
(:data:`LATENCY_RANGE_S`) unless the rows prove more: rows spanning two or more different
numbers of servers (inter-server) or of devices per server (intra-server), of three or more
distinct jobs, widen it to :data:`WIDE_LATENCY_S` with a prior as wide as a bandwidth's; rows
whose data cost a latency explanation lowers significantly (a likelihood-ratio test at 5 %,
:func:`placer.calibration.fit.fit_rows`; only where a row spans more than 2 servers) get the wide
prior inside the physical range.

After the fit, a constant was *identified by the rows* when its posterior standard deviation
(Gauss-Newton, data and prior together) is under half its prior's; otherwise its value came from
the prior. A constant within 0.1 % of a bound is flagged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NOISE = 0.05  # soft-L1 scale of the data residuals (log step time), and the unit the priors are weighed in
BANDWIDTH_SIGMA = 2.5
LATENCY_SIGMA = 1.0
SCALE_SIGMA = 2.0
OVERLAP_SIGMA = 0.5
OVERHEAD_SIGMA_S = 0.1
LATENCY_RANGE_S = {"intra_server": (1e-6, 1e-4), "inter_server": (2e-6, 2e-3)}  # NVLink/PCIe; Ethernet/InfiniBand NICs
WIDE_LATENCY_S = (1e-7, 0.1)
IDENTIFIED_RATIO = 0.5
BOUND_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Parameter:
    """One fitted constant: its ``keys`` in the cluster file, nominal value, bounds, units and prior width (in ``x`` units)."""

    keys: tuple[str, ...]
    nominal: float
    low: float
    high: float
    log: bool
    sigma: float

    @property
    def path(self) -> str:
        return ".".join(self.keys)

    def to_x(self, value: float) -> float:
        return math.log(value) if self.log else value

    def from_x(self, x: float) -> float:
        return min(max(math.exp(x) if self.log else x, self.low), self.high)  # exp(log(v)) may land a hair outside

    @property
    def bounds(self) -> tuple[float, float]:
        return self.to_x(self.low), self.to_x(self.high)

    def bound_hit(self, value: float) -> str | None:
        """``"lower"`` / ``"upper"`` when ``value`` sits on that bound (within :data:`BOUND_TOLERANCE`), else None."""
        for side, edge in (("lower", self.low), ("upper", self.high)):
            if abs(value - edge) <= BOUND_TOLERANCE * max(abs(edge), abs(self.nominal), 1e-12):
                return side
        return None


def latency_bounds(link: str, nominal: float, proven: bool, preferred: bool = False) -> tuple[float, float, float]:
    """(low, high, sigma) of a link's latency: the link type's physical range (stretched to hold the nominal) unless ``proven``;
    a prior as wide as a bandwidth's where ``proven`` or ``preferred`` (the rows fit a latency explanation significantly better)."""
    if proven:
        return *WIDE_LATENCY_S, BANDWIDTH_SIGMA
    low, high = LATENCY_RANGE_S[link]
    low = min(low, nominal) if nominal > 0 else low  # a nominal 0 (an idealised link) starts at the range's low end
    return low, max(high, nominal), BANDWIDTH_SIGMA if preferred else LATENCY_SIGMA


def prior_loss(rows: int):
    """A ``least_squares`` loss: soft-L1 on the first ``rows`` residuals (data), plain squares on the rest (priors)."""

    def rho(z: np.ndarray) -> np.ndarray:
        out = np.empty((3, z.size))
        out[0], out[1], out[2] = z, 1.0, 0.0
        d = z[:rows]
        t = 1 + d
        out[0, :rows] = 2 * (np.sqrt(t) - 1)
        out[1, :rows] = t**-0.5
        out[2, :rows] = -0.5 * t**-1.5
        return out

    return rho


def identified(params: list[Parameter], jacobian: np.ndarray, x: np.ndarray) -> dict[str, str]:
    """path -> ``"rows"`` or ``"prior"`` (module docstring); ``jacobian``: data residuals by ``x``, at the fit, free constants only.

    A constant on a bound counts as set by the rows only if its posterior is narrow there too.
    """
    if not params:
        return {}
    precision_prior = np.array([1 / p.sigma**2 for p in params])
    h = jacobian.T @ jacobian / NOISE**2 + np.diag(precision_prior)
    try:
        cov = np.linalg.inv(h)
    except np.linalg.LinAlgError:
        cov = np.diag(1 / precision_prior)
    ratio = np.sqrt(np.clip(np.diag(cov), 0, None)) * np.sqrt(precision_prior)
    return {p.path: "rows" if r < IDENTIFIED_RATIO else "prior" for p, r in zip(params, ratio, strict=True)}
