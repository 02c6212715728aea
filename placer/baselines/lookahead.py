"""An online lookahead planner: sample futures, roll ``lean`` forward, deviate on a clear gain.

``lookahead:k=K:h=H:m=M`` (defaults 4, 16, 0.25). For the offered job the planner considers a
few candidate decisions: lean's choice, holding (rejecting, without a queue), the smallest
feasible degree and the fastest feasible placement. It samples ``K`` futures of ``H`` arrivals
from the jobs it has seen (graph, deadline, length resampled; gaps exponential at the observed
rate), and for each candidate simulates the cluster from the current snapshot (the devices' busy
times and the waiting jobs, :class:`~placer.sim.simulator.Simulator`'s ``busy_until``/``waiting``)
with its ``lean`` deciding everything after (the same rule as the planner's own, admission
threshold included), until every job present or sampled has started or left.
All candidates share the same futures (common random numbers). It picks the candidate with the
fewest blocked jobs on average, but leaves lean's choice only when that saves more than ``M``
jobs. Until it has seen 16 jobs it follows lean. It knows nothing of the workload but what it saw.
:meth:`Lookahead.stats` counts the offers of a run and the deviations from lean by kind
(``decline``, ``start``, ``fewer devices``, ``more devices``, ``other devices``).
``hindsight:h=H:m=M`` (:class:`Hindsight`) plans on the stream's actual next ``H`` arrivals.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from placer.baselines.heuristics import Lean
from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import PolicyError
from placer.sim.options import degrees_for, options
from placer.sim.simulator import Simulator
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Outcome, Place, Reject
from placer.workloads.generator import JobSpec

MIN_HISTORY = 16
HISTORY = 256
FORK_JOB_IDS = 1 << 40  # job ids of sampled jobs, far from real ones


@dataclass
class Lookahead(Lean):
    futures: int = 4
    horizon: int = 16
    margin: float = 0.25
    min_history: int = MIN_HISTORY
    _history: dict[int, Job] = field(default_factory=dict, repr=False)
    _offers: int = field(default=0, repr=False)
    _deviations: Counter = field(default_factory=Counter, repr=False)
    last_estimates: list[tuple[Decision, float]] = field(default_factory=list, repr=False)

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._history, self._offers, self._deviations = {}, 0, Counter()

    def estimates(self) -> list[tuple[Decision, float]]:
        return self.last_estimates

    def stats(self) -> dict:
        """Since the last reset: ``offers`` (decisions asked for) and ``deviations`` from lean, by kind."""
        return {"offers": self._offers, "deviations": dict(sorted(self._deviations.items()))}

    def decide(self, job: Job, view: ClusterView) -> Decision:
        """The planner's choice; ``last_estimates`` then holds each candidate it rolled out with the jobs
        it is estimated to block from now on, lean's choice first with the margin taken off (empty when
        it followed lean without planning)."""
        self._offers += 1
        self.last_estimates = []
        for seen in (*view.waiting, job):
            self._history.setdefault(seen.job_id, seen)
        base = super().decide(job, view)
        if len(self._history) < self.min_history:
            return base
        candidates = self._candidates(job, view, base)
        if len(candidates) < 2:
            return base
        futures = [self._sample_future(view.now) for _ in range(self.futures)]
        blocked = [np.mean([self._rollout(job, view, c, f) for f in futures]) for c in candidates]
        self.last_estimates = [
            (c, float(b) - (self.margin if k == 0 else 0.0)) for k, (c, b) in enumerate(zip(candidates, blocked, strict=True))
        ]
        best = int(np.argmin(blocked))
        if blocked[0] - blocked[best] <= self.margin:
            return base
        self._deviations[deviation_kind(base, candidates[best])] += 1
        return candidates[best]

    def _candidates(self, job: Job, view: ClusterView, base: Decision) -> list[Decision]:
        table = [o for o in options(job, view, degrees=degrees_for(view, self.max_degree), rules=tuple(PLACEMENT_RULES)) if o.feasible]
        out: list[Decision] = [base, Reject()]
        if table:
            out.append(min(table, key=lambda o: (o.degree, o.jct_s)).place())
            out.append(min(table, key=lambda o: (o.jct_s, o.degree)).place())
        unique: list[Decision] = []
        for decision in out:
            if decision not in unique:
                unique.append(decision)
        return unique

    def _sample_future(self, now: float) -> list[JobSpec]:
        seen = list(self._history.values())[-HISTORY:]
        arrivals = sorted(j.arrival_s for j in seen)
        gap = (arrivals[-1] - arrivals[0]) / max(len(arrivals) - 1, 1) or 1.0
        times = now + np.cumsum(self.rng.exponential(gap, self.horizon))
        picks = self.rng.integers(len(seen), size=self.horizon)
        return [JobSpec(float(t), seen[i].graph, seen[i].beta, seen[i].iterations) for t, i in zip(times, picks, strict=True)]

    def _base_rule(self) -> Lean:
        """The rule that decides inside a rollout: this planner's ``lean``, with the job sizes it has seen (its admission threshold)."""
        planner = Lean(rule=self.rule, max_degree=self.max_degree, cap=self.cap, admit=self.admit, admit_free=self.admit_free)
        planner._sizes, planner._seen = list(self._sizes), set(self._seen)
        return planner

    def _rollout(self, job: Job, view: ClusterView, decision: Decision, future: list[JobSpec]) -> int:
        """Jobs blocked from now on if ``job`` gets ``decision`` and lean decides the rest."""
        busy_until = np.where(view.free, -np.inf, view.free_at)
        blocked = 0
        waiting = [j for j in view.waiting if j.job_id != job.job_id]
        held: tuple[int, ...] = ()
        if isinstance(decision, Place):
            jct = view.cost.jct_s(job.graph, decision.devices, job.iterations)
            busy_until[list(decision.devices)] = view.now + jct
        elif view.queue.enabled:
            waiting.append(job)
            held = (job.job_id,)
        else:
            blocked = 1
        sim = Simulator(
            view.cost, future, queue=view.queue, now=view.now, busy_until=busy_until, waiting=waiting, held=held, first_job_id=FORK_JOB_IDS
        )
        planner = self._base_rule()
        while (offered := sim.next_job()) is not None:
            sim.decide(planner.decide(offered, sim.view()))
        return blocked + sum(r.outcome is not Outcome.ACCEPTED for r in sim.records)


def deviation_kind(base: Decision, chosen: Decision) -> str:
    """How ``chosen`` departs from ``base``: decline (or hold) a job lean starts, start one it holds, or place it differently."""
    if not isinstance(chosen, Place):
        return "decline"
    if not isinstance(base, Place):
        return "start"
    if len(chosen.devices) != len(base.devices):
        return "fewer devices" if len(chosen.devices) < len(base.devices) else "more devices"
    return "other devices"


@dataclass
class Hindsight(Lookahead):
    """The planner given the stream's actual future: ``hindsight:h=H:m=M`` (and ``admit``, ``free``).

    Not an online policy: it must be told the whole job stream (:meth:`foresee`) after each
    ``reset``, and plans each offer on the next ``H`` real arrivals instead of sampled ones. It is
    a clairvoyant reference, and a teacher whose labels a learner (which sees only the present)
    imitates on average (:mod:`placer.policies.imitation`).
    """

    futures: int = 1
    min_history: int = 0
    _stream: tuple[JobSpec, ...] = field(default=(), repr=False)
    _arrivals: list[float] = field(default_factory=list, repr=False)

    def foresee(self, jobs: Sequence[JobSpec]) -> None:
        """The stream this episode will run (sorted by arrival time)."""
        self._stream = tuple(jobs)
        self._arrivals = [spec.arrival_s for spec in self._stream]

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if not self._stream:
            message = "hindsight is a clairvoyant reference: it needs the whole job stream (placer evaluate, or foresee(jobs) after reset)"
            raise PolicyError(message)
        return super().decide(job, view)

    def _sample_future(self, now: float) -> list[JobSpec]:
        first = bisect.bisect_right(self._arrivals, now)
        return list(self._stream[first : first + self.horizon])
