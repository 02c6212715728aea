"""The option table of an offer as the compiled engine builds it (:mod:`placer.sim.engine.offers`), read without numba:
a learned policy's observation reads it, and deciding with one must not import the compiler."""

from __future__ import annotations

import numpy as np

from placer.sim.options import Option, OptionTable
from placer.sim.state import ClusterView
from placer.sim.types import DEADLINE_TOLERANCE, Job


class EngineOptions(OptionTable):
    """:class:`~placer.sim.options.OptionTable` of ``job`` on ``view`` at degrees 1..min(``max_degree``, devices) x
    ``rules`` (and the rows without devices beyond, up to ``max_degree``), from the engine's arrays: ``degree``,
    ``valid`` (devices free), ``repeat``, ``jct_s`` (s; inf without devices or memory), ``spanned``, ``breaks`` (each
    (n,)) and ``ranks`` ((n, 3): the split's dp, tp, pp where the job fits; all 0 without one, or for ``sipml``);
    :meth:`devices_at` and :meth:`strategy_at` give an option's devices and the cost model's split there; ``num_free``
    and ``whole`` count the free devices and the wholly free servers."""

    def __init__(self, job: Job, view: ClusterView, rules: tuple[str, ...], max_degree: int, arrays: dict) -> None:
        self.job, self.view, self.rules = job, view, rules
        self.deadline_s = job.remaining_s(view.now)
        self.degree, self.valid, self.repeat = arrays["degree"], arrays["valid"], arrays["repeat"]
        self._jct, self.spanned, self.breaks = arrays["jct"], arrays["spanned"], arrays["breaks"]
        self._free_ids, self._positions, self._shape = arrays["ids"], arrays["positions"], arrays["shape"]
        self._graph_row, self._strategies = arrays["graph_row"], arrays["strategies"]
        self.ranks = arrays["ranks"]
        self._num_free, self._whole = arrays["num_free"], arrays["whole"]
        self.n_table = len(self.degree)
        self._pad_from = self.n_table // len(rules) + 1
        self.padding = max(max_degree - self._pad_from + 1, 0) * len(rules)
        self._built: list[Option | None] = [None] * (self.n_table + self.padding)

    @property
    def num_free(self) -> int:
        return self._num_free

    @property
    def whole(self) -> int:
        return self._whole

    @property
    def jct_s(self) -> np.ndarray:
        return self._jct

    @property
    def feasible(self) -> np.ndarray:
        out = np.zeros(len(self), dtype=bool)
        out[: self.n_table] = self._meets(self._jct)
        return out

    def at_degree(self, degree: int) -> range:
        per_degree = len(self.rules)
        if not 1 <= degree <= self.n_table // per_degree:
            return range(0)
        return range((degree - 1) * per_degree, degree * per_degree)

    def thriftiest(self, tie: float) -> int | None:
        jct = self._jct
        feasible = self._meets(jct) & ~self.repeat
        if not feasible.any():
            return None
        seconds = self.degree * jct
        index = np.flatnonzero(feasible & (seconds <= seconds[feasible].min() * (1 + tie)))
        return int(index[np.lexsort((index, seconds[index], jct[index], self.degree[index]))[0]])

    def devices_at(self, i: int) -> tuple[int, ...] | None:
        """Option ``i``'s device ids, ascending (None without devices)."""
        if i >= self.n_table or not self.valid[i]:
            return None
        return tuple(self._free_ids[self._positions[i, : self.degree[i]]].tolist())

    def strategy_at(self, i: int):
        """The cost model's split of the job on option ``i``'s devices (None without devices or split)."""
        if i >= self.n_table or not self.valid[i]:
            return None
        return self._strategies.get((self._graph_row, int(self._shape[i])))

    def _meets(self, jct: np.ndarray) -> np.ndarray:
        return np.isfinite(jct) & (jct <= self.deadline_s * (1 + DEADLINE_TOLERANCE))

    def _option(self, i: int) -> Option:
        rules = self.rules
        if i >= self.n_table:  # beyond the cluster: no devices
            j = i - self.n_table
            return Option(self._pad_from + j // len(rules), rules[j % len(rules)], None, None, self.job.deadline_s)
        degree, rule = int(self.degree[i]), rules[i % len(rules)]
        if not self.valid[i]:
            return Option(degree, rule, None, None, self.deadline_s, None)
        jct = float(self._jct[i]) if np.isfinite(self._jct[i]) else None
        return Option(degree, rule, self.devices_at(i), jct, self.deadline_s, self.strategy_at(i), int(self.spanned[i]))
