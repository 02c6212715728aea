"""``elastic_lean``: ``lean`` on the elastic simulator (:mod:`placer.sim.elastic`): it lends idle devices to running jobs
and takes them back to admit.

- *Admission and degree*: ``lean``'s (its size admission ``admit=Q:free=F``, its ``cap=K``, the least device-time over
  every degree and placement rule, ``+RULE`` first among equals) on the devices free now.
- *Shrink to admit*: when lean finds nothing feasible on the free devices, running jobs that were *grown* (they hold more
  devices than lean started them on; with ``shrink=all``, as ElasticFlow, every job on more than one device) give devices
  back: each to the smallest degree that still meets its deadline (its
  :func:`~placer.baselines.elasticflow.min_share`, the pause counted), on the fastest subset of its own devices, the one
  that loses least time per device freed first, until lean's choice on the devices so freed is feasible; then each of
  them keeps the most devices that still admit the job. The arriving job is declined when even all of them cannot.
- *Grow*: after the completions of an instant (``rebalance``, nothing while jobs wait in a queue) the idle devices go, a
  step at a time, to the running job whose finish moves earliest per device added (ElasticFlow's
  :func:`~placer.baselines.elasticflow.best_step`; any degree up to ``max_degree``, the fastest placement on its own and
  the idle devices, the pause counted, so a job near its end is not grown).

Every set of resizes is checked by :func:`~placer.sim.elastic.plan_resizes` before it is handed to the simulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from placer.baselines.elasticflow import Claim, best_step, min_share
from placer.baselines.heuristics import Lean
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.elastic import ResizeError, RunningJob, plan_resizes, resize_pause_s
from placer.sim.options import Option
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject, Resize, meets_deadline

Choice = tuple[tuple[int, ...], float]  # devices and the iteration (s) there


@dataclass
class ElasticLean(Lean):
    """``elastic_lean`` (module docstring); ``lean``'s options (``cap``, ``admit``, ``admit_free``, ``rule``), and
    ``shrink_all`` (``shrink=all``): to admit, any running job may give devices back, not only those it grew."""

    elastic: ClassVar[bool] = True
    shrink_all: bool = False
    _started: dict[int, int] = field(default_factory=dict, repr=False)  # running job id -> the degree it started at
    _shrinks: dict[str, int] = field(default_factory=dict, repr=False)  # arrivals admitted or declined after trying to shrink

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._started, self._shrinks = {}, {"admitted": 0, "declined": 0}

    def stats(self) -> dict[str, Any] | None:
        """How many arrivals taking devices back admitted, and how many it could not (none tried: None)."""
        return {f"{key}_by_shrinking": count for key, count in self._shrinks.items()} if any(self._shrinks.values()) else None

    @property
    def largest(self) -> int:
        return min(self.max_degree, self.cap or self.max_degree)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        if self.admit is not None and self._large(job, view, self.admit):
            return Reject()
        running = {r.job.job_id for r in view.running_jobs}
        self._started = {jid: degree for jid, degree in self._started.items() if jid in running}
        chosen = self.thrifty(job, view)
        if chosen is not None:
            decision: Decision = chosen.place()
        elif view.elastic and any(self._shrinkable(r) for r in view.running_jobs):
            decision = self._shrink_to_admit(job, view)
            key = "admitted" if isinstance(decision, Place) else "declined"
            self._shrinks[key] = self._shrinks.get(key, 0) + 1
        else:
            decision = Reject()
        if isinstance(decision, Place):
            self._started[job.job_id] = decision.degree
        return decision

    def rebalance(self, view: ClusterView) -> Sequence[Resize]:
        """Grow running jobs into the idle devices (module docstring)."""
        if view.waiting or not view.running_jobs or not view.free.any():
            return ()
        now, free = view.now, view.free.copy()
        running = {r.job.job_id: r for r in view.running_jobs}
        held = {jid: r.devices for jid, r in running.items()}
        seconds = {jid: r.finish_s - now for jid, r in running.items()}  # from now to its finish as planned
        while free.any():
            claims, choices = [], {}
            for jid, r in running.items():
                own = held[jid]
                degrees = range(len(own) + 1, min(self.largest, len(own) + int(free.sum())) + 1)
                if not degrees:
                    continue
                mine = free.copy()
                mine[list(own)] = True
                choices[jid] = fastest(view.cost, r.job.graph, mine, degrees, self.rules_in_preference(), own)
                claims.append(Claim(r.job, r, {len(own): seconds[jid]} | _times(view, r, choices[jid])))
            step = best_step(claims, {jid: len(devices) for jid, devices in held.items()}, int(free.sum()))
            if step is None:
                break
            _, jid, degree = step
            devices = choices[jid][degree][0]
            free[list(held[jid])] = True
            free[list(devices)] = False
            held[jid] = devices
            seconds[jid] = next(c.times[degree] for c in claims if c.job_id == jid)
        resizes = tuple(Resize(jid, held[jid]) for jid, r in running.items() if set(held[jid]) != set(r.devices))
        return resizes if _valid(view, running, resizes) else ()

    def _shrink_to_admit(self, job: Job, view: ClusterView) -> Decision:
        """Take devices back from shrinkable jobs (grown ones; ``shrink_all``: any on 2 or more) to admit ``job`` (module
        docstring), or decline it."""
        running = {r.job.job_id: r for r in view.running_jobs}
        smaller: dict[int, dict[int, Choice]] = {}  # shrinkable job -> degree -> its devices there (a subset of its own)
        order: list[tuple[float, int, int]] = []  # (seconds lost per device freed, job id, its floor)
        meeting: dict[int, set[int]] = {}  # shrinkable job -> the degrees at which it meets its deadline
        for jid, r in running.items():
            if not self._shrinkable(r):
                continue  # never grown (or on one device)
            own = np.zeros(view.cluster.num_devices, dtype=bool)
            own[list(r.devices)] = True
            smaller[jid] = fastest(view.cost, r.job.graph, own, range(1, r.degree), self.rules_in_preference(), r.devices)
            times = {r.degree: r.finish_s - view.now} | _times(view, r, smaller[jid])
            floor = min_share(Claim(r.job, r, times), view.now)
            meeting[jid] = {d for d, t in times.items() if meets_deadline(t, r.job.remaining_s(view.now))}
            if floor is not None and floor < r.degree:
                order.append(((times[floor] - times[r.degree]) / (r.degree - floor), jid, floor))
        targets: dict[int, int] = {}
        for _, jid, floor in sorted(order):
            targets[jid] = floor
            if self._admits(job, view, running, smaller, targets) is not None:
                break
        else:
            return Reject()
        for jid in reversed(list(targets)):  # each keeps the most devices that still admit the job
            for degree in sorted(d for d in meeting[jid] if d > targets[jid])[::-1]:
                if self._admits(job, view, running, smaller, targets | {jid: degree}) is not None:
                    targets[jid] = degree
                    break
        chosen = self._admits(job, view, running, smaller, targets)
        resizes = tuple(Resize(jid, smaller[jid][degree][0]) for jid, degree in targets.items() if degree < running[jid].degree)
        if chosen is None or not _valid(view, running, resizes):
            return Reject()
        return Place(chosen.place().devices, resizes)

    def _shrinkable(self, running: RunningJob) -> bool:
        """Whether ``running`` may give devices back to admit: grown beyond its start (``shrink_all``: on 2 or more)."""
        floor = 1 if self.shrink_all else self._started.get(running.job.job_id, running.degree)
        return running.degree > floor

    def _admits(
        self, job: Job, view: ClusterView, running: dict[int, RunningJob], smaller: dict[int, dict[int, Choice]], targets: dict[int, int]
    ) -> Option | None:
        """Lean's choice for ``job`` once each job of ``targets`` is shrunk to its degree there (None: nothing feasible)."""
        free = view.free.copy()
        for jid, degree in targets.items():
            if degree < running[jid].degree:
                free[list(set(running[jid].devices) - set(smaller[jid][degree][0]))] = True
        return self.thrifty(job, replace(view, free=free))


def fastest(
    cost: CostModel, graph: JobGraph, free: np.ndarray, degrees: Iterable[int], rules: Sequence[str], own: tuple[int, ...]
) -> dict[int, Choice]:
    """Per degree, the fastest placement of ``graph`` on the devices ``free`` among the placement ``rules`` (those that fit in
    memory; ties go to the one keeping most of the devices ``own``, then to the first rule), with its iteration (s)."""
    out: dict[int, Choice] = {}
    best: dict[int, tuple[float, int]] = {}
    for degree, _, devices, shape, _ in cost.placements(free, tuple(degrees), tuple(rules)):
        if devices is None or shape is None:
            continue
        prediction = cost.predict(graph, shape)
        if not prediction.fits:
            continue
        key = (prediction.iteration_s, -len(set(own).intersection(devices)))
        if degree not in best or key < best[degree]:
            best[degree], out[degree] = key, (devices, prediction.iteration_s)
    return out


def _times(view: ClusterView, running: RunningJob, choices: dict[int, Choice]) -> dict[int, float]:
    """Seconds from now to ``running``'s finish if resized now onto each choice: the pause, then what is left there."""
    pause = resize_pause_s(view.cluster, running.job.graph)
    return {degree: pause + running.remaining(view.now) * iteration_s for degree, (_, iteration_s) in choices.items()}


def _valid(view: ClusterView, running: dict[int, RunningJob], resizes: tuple[Resize, ...]) -> bool:
    """Whether the simulator would carry ``resizes`` out (:func:`~placer.sim.elastic.plan_resizes`)."""
    try:
        plan_resizes(view.cost, view.free, running, resizes, view.now)
    except ResizeError:
        return False
    return True
