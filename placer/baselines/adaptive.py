"""``adaptive``: the best member of every heuristic family for the load it measures, online.

``best`` is told the regime (it is tuned on each workload of an evaluation separately); ``single-best``
is one configuration for all. ``adaptive`` has what a deployed policy has: it is tuned once, on the
tuning streams of every load of the evaluation (:attr:`Tuning.regimes`, apart from the evaluated
streams), to a table of *load -> member* (per load, the member of :data:`~placer.baselines.best.BEST_CANDIDATES`
with the least avoidable blocking, pooled over the beta distributions at that load); at run time it
measures the offered load from the arrivals it has seen and runs the member of the nearest tuned load
(nearest in log load; each tuned load as the meter reads it on that load's tuning streams, since it sees
only the jobs it is offered). It changes member only once the table has asked for another one for
``sticky`` arrivals in a row (tuned with the meter's window, from :data:`STICKINESS` x :data:`WINDOWS`, on the
same tuning streams): members mix badly,
and a noisy reading would otherwise switch back and forth. Under a load that changes over the day it
follows the load. A member's
placement that would miss the job's deadline (members such as ``para_max`` place on whatever is free,
and another member's jobs may have left the cluster fragmented) is held in the queue instead.

The measured load (:class:`LoadMeter`): arrivals per second over the last ``window`` arrivals (from the job
ids, which the simulator numbers in arrival order, so jobs that left without an offer still count) x the mean
sequential JCT of the jobs seen / the cluster's devices, as :class:`~placer.workloads.generator.Workload` defines
load. Until :data:`WARMUP` jobs were seen it runs the member of the highest tuned load: a wide member's early
placements cost little at low load, where a narrow member's long jobs fragment the cluster for a wide one later.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placer.baselines.best import TUNING_METRIC
from placer.baselines.policy import TUNING_SEED, Policy, Tuning, run_policy
from placer.baselines.specs import PolicySpec
from placer.common.errors import PolicyError
from placer.sim.history import WINDOW, LoadMeter
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject, meets_deadline

WINDOWS = (32, 96)  # tuned: short follows a daily cycle, long reads a steady load better
WARMUP = 3  # jobs seen before the measured load is trusted
STICKINESS = (16, 32, 64, 128)  # arrivals the table must ask for another member, without a break, before it runs
# (members mix badly: a narrow member's long jobs fragment the cluster for a wide one); tuned, the least blocking


@dataclass
class _Probe(Policy):
    """Runs ``member`` and records what a :class:`LoadMeter` over each of :data:`WINDOWS` reads at each of its decisions
    (after the warm-up)."""

    member: Policy
    readings: dict[int, list[float]] = field(default_factory=lambda: {window: [] for window in WINDOWS})
    _meters: list[LoadMeter] = field(default_factory=list)

    def reset(self, rng: np.random.Generator) -> None:
        self._meters = [LoadMeter(window) for window in WINDOWS]
        self.member.reset(rng)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        for meter in self._meters:
            meter.observe(job)
            load = meter.load(view.cluster.num_devices)
            if load is not None and meter.seen >= WARMUP:
                self.readings[meter.window].append(load)
        return self.member.decide(job, view)


def _measured_loads(regimes: list[Tuning], member: Policy) -> dict[int, float]:
    """Per window of :data:`WINDOWS`, the median load a :class:`LoadMeter` reads on the tuning streams of ``regimes``
    (one load) while ``member`` decides: what the meter shows at that load (it reads high where the jobs no policy can
    serve leave unseen)."""
    probe = _Probe(copy.deepcopy(member))
    for regime in regimes:
        for k, jobs in enumerate(regime.jobs):
            run_policy(probe, regime.cost, jobs, regime.queue, np.random.default_rng([TUNING_SEED + k, 1]))
    if not all(probe.readings.values()):
        raise PolicyError("adaptive: its tuning streams are too short to measure the load on (evaluate more --jobs)")
    return {window: float(np.median(readings)) for window, readings in probe.readings.items()}


@dataclass
class Adaptive(Policy):
    """``adaptive``: runs, per decision, the member tuned for the load it measures (module docstring); unusable before :meth:`tuned`."""

    candidates: Mapping[str, Policy]
    spec: PolicySpec | None = None
    table: tuple[tuple[float, str], ...] = ()  # (tuned load, member), by load
    fallback: str | None = None  # the member of the highest tuned load: run until the load is measured
    tuning_blocking: dict[float, dict[str, float]] | None = field(default=None, repr=False)
    _members: dict[str, Policy] = field(default_factory=dict, repr=False)
    _meter: LoadMeter = field(default_factory=LoadMeter, repr=False)
    _runs: dict[str, int] = field(default_factory=dict, repr=False)
    _held: int = 0  # members' placements that would have missed the deadline, held or rejected instead
    sticky: int = STICKINESS[0]  # tuned from STICKINESS
    window: int = WINDOW  # the meter's, tuned from WINDOWS
    _current: str | None = field(default=None, repr=False)  # the member running now
    _pull: str | None = field(default=None, repr=False)  # the member the table asks for instead, and since which arrival
    _pull_seen: int = field(default=0, repr=False)
    _tunings: list[tuple[tuple[Tuning, ...], Adaptive]] = field(default_factory=list, repr=False)

    def tuned(self, tuning: Tuning) -> Adaptive:
        """A copy with the table of measured load -> member from the tuning streams of every load of the
        evaluation (made once per set of regimes: every workload of an evaluation gets the same policy)."""
        for regimes, tuned in self._tunings:
            if len(regimes) == len(tuning.pooled) and all(a is b for a, b in zip(regimes, tuning.pooled, strict=True)):
                return tuned
        tuned = self._tune(tuning)
        self._tunings.append((tuning.pooled, tuned))  # holds the regimes: compared by identity, never by a reused id
        return tuned

    def _tune(self, tuning: Tuning) -> Adaptive:
        by_load: dict[float, list[Tuning]] = {}
        for regime in tuning.pooled:
            if regime.load is None:
                raise PolicyError("adaptive must be tuned on workloads of known load (placer evaluate does it)")
            by_load.setdefault(regime.load, []).append(regime)
        blocking = {
            load: {name: float(np.mean([r.blocking(p, TUNING_METRIC) for r in regimes])) for name, p in self.candidates.items()}
            for load, regimes in sorted(by_load.items())
        }
        chosen = {load: min(self.candidates, key=per.__getitem__) for load, per in blocking.items()}  # min: first of equals
        fallback = chosen[max(chosen)]
        members = {name: copy.deepcopy(self.candidates[name]) for name in dict.fromkeys([fallback, *chosen.values()])}
        measured = {load: _measured_loads(by_load[load], self.candidates[name]) for load, name in chosen.items()}
        tried = []
        for window in WINDOWS:
            table = tuple((measured[load][window], name) for load, name in chosen.items())
            tried += [
                Adaptive(self.candidates, self.spec, table, fallback, blocking, copy.deepcopy(members), sticky=k, window=window)
                for k in STICKINESS
            ]
        pooled = [float(np.mean([r.blocking(policy, TUNING_METRIC) for r in tuning.pooled])) for policy in tried]
        return tried[int(np.argmin(pooled))]

    def member_for(self, load: float | None) -> str:
        """The member run at measured load ``load`` (the fallback when unknown)."""
        if self.fallback is None:
            raise PolicyError("adaptive must be tuned on a workload first (placer evaluate does it)")
        if load is None or load <= 0 or not self.table:
            return self.fallback
        return min(self.table, key=lambda entry: abs(math.log(entry[0] / load)))[1]

    def reset(self, rng: np.random.Generator) -> None:
        self._meter, self._runs, self._held = LoadMeter(self.window), {}, 0
        self._current, self._pull, self._pull_seen = self.fallback, None, 0
        for member in self._members.values():
            member.reset(rng)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        self._meter.observe(job)
        load = self._meter.load(view.cluster.num_devices) if self._meter.seen >= WARMUP else None
        name = self._sticky(self.member_for(load))
        self._runs[name] = self._runs.get(name, 0) + 1
        decision = self._members[name].decide(job, view)
        if isinstance(decision, Place) and decision.devices and not self._in_time(job, view, decision.devices):
            self._held += 1
            return Reject()  # a placement that would miss the deadline only wastes devices: hold (or reject) instead
        return decision

    def _sticky(self, wanted: str) -> str:
        """The member to run: the current one until the table has asked for another for :attr:`sticky` arrivals in a row."""
        if wanted == self._current:
            self._pull = None
        elif wanted != self._pull:
            self._pull, self._pull_seen = wanted, self._meter.seen
        elif self._meter.seen - self._pull_seen >= self.sticky:
            self._current, self._pull = wanted, None
        return self._current or wanted

    @staticmethod
    def _in_time(job: Job, view: ClusterView, devices: tuple[int, ...]) -> bool:
        cost = view.cost
        return cost.fits(job.graph, devices) and meets_deadline(cost.jct_s(job.graph, devices, job.iterations), job.remaining_s(view.now))

    def stats(self) -> dict[str, Any] | None:
        if self.fallback is None:
            return None
        return {
            "table": [list(entry) for entry in self.table],
            "fallback": self.fallback,
            "sticky": self.sticky,
            "window": self.window,
            "decisions_by_member": dict(self._runs),
            "held": self._held,
        }
