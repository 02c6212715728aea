"""``elasticflow``: ElasticFlow's deadline scheduler (Gu et al., "ElasticFlow: An Elastic Serverless Training Platform
for Distributed Deep Learning", ASPLOS 2023), on the elastic simulator (:mod:`placer.sim.elastic`).

Each job's degree is a power of two on a buddy block (:mod:`placer.cluster.buddy`). At every arrival and after every
completion the policy plans the whole cluster again:

1. *Minimum satisfactory share*: for each running job and the arriving one, the fewest devices that still meet its
   deadline: a running job at its current degree takes the time its current plan says (no pause); at any other degree
   the resize's pause plus its remaining iterations at that degree; the arriving job its iterations at that degree.
   A degree's iteration time is the slowest of the buddy blocks of that size the job fits on (so any block will do).
2. *Admission*: the arriving job is admitted only if the minimum shares of all jobs together fit on the cluster's
   buddy blocks; else it is declined and nothing moves.
3. *Diminishing returns*: the devices left over go, a step at a time, to the job whose finish moves earliest per
   device added (from its degree now to any larger power of two; pauses counted, so a job near its end is not grown).
   Devices held beyond a minimum share are taken back when a new job needs them.
4. *Buddy placement*: the largest jobs are placed first, each on the free block that displaces the fewest devices of
   other running jobs, then holds most of its own (a job that keeps its degree keeps its devices, one that halves keeps
   a half of them). Every job whose devices change is a :class:`~placer.sim.types.Resize`; the plan is used only if
   each still meets its deadline (else the arriving job is admitted without moving the others, or declined).

What is simplified against the paper is listed in docs/elastic.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar
from weakref import WeakKeyDictionary

import numpy as np

from placer.baselines.policy import Policy
from placer.baselines.specs import PolicySpec
from placer.cluster.buddy import buddy_blocks, powers_of_two
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.elastic import RunningJob, resize_pause_s
from placer.sim.options import DEFAULT_MAX_DEGREE
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject, Resize, meets_deadline

Block = tuple[int, ...]
_SHAPES: WeakKeyDictionary[CostModel, dict[int, list[tuple[object, list[Block]]]]] = WeakKeyDictionary()
_USABLE: WeakKeyDictionary[CostModel, dict[tuple[str, int], tuple[float, list[Block]]]] = WeakKeyDictionary()


@dataclass
class Claim:
    """A job in a plan: the seconds it would take from now at each degree it may have (also elastic lean's)."""

    job: Job
    running: RunningJob | None
    times: dict[int, float]  # degree -> seconds from now to its finish at that degree

    @property
    def job_id(self) -> int:
        return self.job.job_id


@dataclass
class ElasticFlow(Policy):
    """ElasticFlow (module docstring); ``max_degree`` caps a job's degree (the largest power of two below it)."""

    max_degree: int = DEFAULT_MAX_DEGREE
    spec: PolicySpec | None = None
    elastic: ClassVar[bool] = True

    def decide(self, job: Job, view: ClusterView) -> Decision:
        # moving the running jobs as planned, else leaving them where they are (all a fixed simulator allows)
        for frozen in (False, True) if view.elastic else (True,):
            plan = self._plan(view, job, frozen)
            if plan is not None:
                devices, resizes = plan
                return Place(devices[job.job_id], resizes)
        return Reject()

    def rebalance(self, view: ClusterView) -> Sequence[Resize]:
        """Hand the devices freed by completions out again (nothing while jobs wait in a queue: they come first)."""
        if view.waiting or not view.running_jobs or not view.free.any():
            return ()
        plan = self._plan(view, None, frozen=False)
        return plan[1] if plan is not None else ()

    # -- planning -----------------------------------------------------------------------
    def _plan(self, view: ClusterView, new: Job | None, frozen: bool) -> tuple[dict[int, Block], tuple[Resize, ...]] | None:
        """Devices for every job and the resizes of the running ones, or None when the jobs' minimum shares do not fit."""
        claims = [self._claim(view, r.job, r, frozen) for r in view.running_jobs]
        if new is not None:
            claims.append(self._claim(view, new, None, frozen))
        shares: dict[int, int] = {}
        for claim in claims:
            share = min_share(claim, view.now)
            if share is None:
                if claim.running is None:
                    return None
                share = claim.running.degree  # it meets its deadline where it is
            shares[claim.job_id] = share
        spare = view.cluster.num_devices - len(_held_elsewhere(view)) - sum(shares.values())
        if spare < 0:
            return None
        degrees = hand_out(claims, shares, spare)
        placed = self._pack(view, claims, degrees, frozen)
        if placed is None:
            return None
        resizes = []
        for claim in claims:
            devices = placed[claim.job_id]
            if claim.running is None:
                if not self._meets(view, claim.job, devices):
                    return None
            elif set(devices) != set(claim.running.devices):
                if not self._resize_meets(view, claim.running, devices):
                    return None
                resizes.append(Resize(claim.job_id, devices))
        return placed, tuple(resizes)

    def _claim(self, view: ClusterView, job: Job, running: RunningJob | None, frozen: bool) -> Claim:
        cost, now = view.cost, view.now
        if running is not None and frozen:
            return Claim(job, running, {running.degree: running.finish_s - now})
        pause = resize_pause_s(cost.cluster, job.graph) if running is not None else 0.0
        work = running.remaining(now) if running is not None else float(job.iterations)
        times: dict[int, float] = {}
        for degree in powers_of_two(min(self.max_degree, cost.cluster.num_devices)):
            iteration_s, blocks = self._blocks(cost, job.graph, degree)
            if blocks:
                times[degree] = pause + work * iteration_s
        if running is not None:
            times[running.degree] = running.finish_s - now  # as it is: no pause
        return Claim(job, running, times)

    def _blocks(self, cost: CostModel, graph: JobGraph, degree: int) -> tuple[float, list[Block]]:
        return usable_blocks(cost, graph, degree)

    def _pack(self, view: ClusterView, claims: list[Claim], degrees: dict[int, int], frozen: bool) -> dict[int, Block] | None:
        """A block for every job (module docstring, step 4), or None when the blocks do not go round. ``frozen``: the
        running jobs keep their devices and the arriving job takes a free block."""
        owner = {d: r.job.job_id for r in view.running_jobs for d in r.devices}
        claimed = _held_elsewhere(view)
        out: dict[int, Block] = {}
        for claim in sorted(claims, key=lambda c: (frozen and c.running is None, -degrees[c.job_id], c.running is None, c.job_id)):
            jid, degree = claim.job_id, degrees[claim.job_id]
            own = set(claim.running.devices) if claim.running is not None else set()
            if claim.running is not None and degree == claim.running.degree and not claimed & own:
                block = claim.running.devices  # keeps its devices
            else:
                free = [b for b in self._blocks(view.cost, claim.job.graph, degree)[1] if not claimed.intersection(b)]
                if not free:
                    return None
                block = min(free, key=lambda b: (sum(owner.get(d, jid) != jid for d in b), -len(own.intersection(b)), b))
            claimed.update(block)
            out[jid] = block
        return out

    def _meets(self, view: ClusterView, job: Job, devices: Block) -> bool:
        prediction = view.cost.predict(job.graph, devices)
        return prediction.fits and meets_deadline(prediction.iteration_s * job.iterations, job.remaining_s(view.now))

    def _resize_meets(self, view: ClusterView, running: RunningJob, devices: Block) -> bool:
        prediction = view.cost.predict(running.job.graph, devices)
        if not prediction.fits:
            return False
        finish = running.finish_if_resized(view.now, prediction.iteration_s, resize_pause_s(view.cluster, running.job.graph))
        return meets_deadline(finish - view.now, running.job.remaining_s(view.now))


def _held_elsewhere(view: ClusterView) -> set[int]:
    """Busy devices of no job the view shows (a fixed simulator's jobs, a service's reservations): never planned on."""
    mine = {d for r in view.running_jobs for d in r.devices}
    return {d for d in np.flatnonzero(~view.free).tolist() if d not in mine}


def min_share(claim: Claim, now: float) -> int | None:
    """The fewest devices at which ``claim``'s job meets its deadline (None: no degree does)."""
    left = claim.job.remaining_s(now)
    return next((d for d in sorted(claim.times) if meets_deadline(claim.times[d], left)), None)


def best_step(claims: Sequence[Claim], degrees: Mapping[int, int], spare: int) -> tuple[float, int, int] | None:
    """The step that moves a finish earliest per device added: ``(seconds saved per device, job id, its new degree)``
    over every claim's larger degrees at most ``spare`` devices above its degree now (``degrees``), None when no step
    saves time (the first claim and degree listed win ties)."""
    best: tuple[float, int, int] | None = None
    for claim in claims:
        now_degree = degrees[claim.job_id]
        now_time = claim.times.get(now_degree, math.inf)
        for degree, time in claim.times.items():
            if now_degree < degree <= now_degree + spare and time < now_time * (1 - 1e-9):
                gain = (now_time - time) / (degree - now_degree)
                if best is None or gain > best[0]:
                    best = (gain, claim.job_id, degree)
    return best


def hand_out(claims: list[Claim], shares: dict[int, int], spare: int) -> dict[int, int]:
    """Degrees from the minimum ``shares`` and ``spare`` devices given, a step at a time, to the job whose finish moves
    earliest per device added (diminishing returns; only steps that save time: :func:`best_step`)."""
    degrees = dict(shares)
    while spare > 0 and (best := best_step(claims, degrees, spare)) is not None:
        _, jid, degree = best
        spare -= degree - degrees[jid]
        degrees[jid] = degree
    return degrees


def usable_blocks(cost: CostModel, graph: JobGraph, degree: int) -> tuple[float, list[Block]]:
    """The buddy blocks of ``degree`` devices ``graph`` fits on, in device order, and the slowest iteration (s) among them
    (inf when it fits on none); once per cost model, graph and degree."""
    known = _USABLE.setdefault(cost, {})
    key = (graph.key, degree)
    if key not in known:
        slowest, usable = 0.0, []
        for shape, blocks in _shapes(cost, degree):
            prediction = cost.predict(graph, shape)
            if prediction.fits:
                slowest = max(slowest, prediction.iteration_s)
                usable += blocks
        known[key] = (slowest if usable else math.inf, sorted(usable))
    return known[key]


def _shapes(cost: CostModel, degree: int) -> list[tuple[object, list[Block]]]:
    """The buddy blocks of ``degree`` devices grouped by their placement shape (one prediction per shape)."""
    known = _SHAPES.setdefault(cost, {})
    if degree not in known:
        groups: dict[int, tuple[object, list[Block]]] = {}
        for block in buddy_blocks(cost.cluster, degree):
            shape = cost.shape(block)
            groups.setdefault(id(shape), (shape, []))[1].append(block)
        known[degree] = list(groups.values())
    return known[degree]
