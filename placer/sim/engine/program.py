"""A rule-based decision program: what the compiled engine runs in place of a heuristic's ``decide``.

A heuristic of :mod:`placer.baselines.heuristics` describes itself as a :class:`Program` (its ``program()``); the
engine knows programs, not policies, as the simulator knows decisions, not policies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import codes as k

KINDS = {
    "para_max": k.PARA_MAX, "para_min": k.PARA_MIN, "fixed": k.FIXED, "eff": k.EFFICIENT, "lean": k.LEAN, "switch": k.SWITCH,
    "external": k.EXTERNAL,
}  # fmt: skip
RULES = {"first_fit": k.FIRST_FIT, "best_fit": k.BEST_FIT, "spread": k.SPREAD}


def external(max_degree: int, screen: tuple[int, tuple[str, ...]] | None = None) -> Program:
    """The program of a policy that decides in Python (learned, planners): the engine asks it at every offer, or, with
    ``screen=(degree, rules)``, only at the offers where some option at degrees 1..min(degree, ``max_degree``) x
    ``rules`` is feasible (devices free, memory fits, deadline met), rejecting the others itself and logging them
    (:meth:`~placer.sim.engine.stream.Stream.screened`), as a policy that rejects whatever it cannot place feasibly would."""
    if screen is None:
        return Program("external", ("first_fit",), max_degree)
    return Program("external", screen[1], max_degree, screen=min(screen[0], max_degree))


@dataclass(frozen=True)
class Program:
    """``kind`` (a key of :data:`KINDS`) over placement ``rules`` (lean: every rule, its preferred first; the others: one)
    at degrees up to ``max_degree``; ``cap`` (lean, 0: none), ``fixed`` (the degree of ``fixed``), ``efficiency``
    (``eff``), ``quiet_free`` (``switch``), ``admit`` (lean's size admission quantile, None: none) with ``admit_free``,
    and lean's ``tie`` (relative, on device-seconds); ``screen`` (``external``: :func:`external`)."""

    kind: str
    rules: tuple[str, ...]
    max_degree: int
    cap: int = 0
    fixed: int = 0
    efficiency: float = 0.0
    quiet_free: float = 0.0
    admit: float | None = None
    admit_free: float = 0.5
    tie: float = 0.0
    screen: int = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(int64 program, float64 program), as the kernels read them (``P_*`` and ``Q_*`` of the kernels)."""
        ints = np.zeros(k.P_INTS, dtype=np.int64)
        ints[k.P_KIND], ints[k.P_MAX_DEGREE], ints[k.P_CAP], ints[k.P_FIXED] = KINDS[self.kind], self.max_degree, self.cap, self.fixed
        ints[k.P_NRULES] = len(self.rules)
        ints[k.P_RULES : k.P_RULES + len(self.rules)] = [RULES[r] for r in self.rules]
        ints[k.P_SCREEN] = self.screen
        floats = np.zeros(5)
        floats[k.Q_EFF], floats[k.Q_QUIET], floats[k.Q_ADMIT_FREE], floats[k.Q_TIE] = (
            self.efficiency, self.quiet_free, self.admit_free, self.tie,
        )  # fmt: skip
        floats[k.Q_ADMIT] = -1.0 if self.admit is None else self.admit
        return ints, floats
