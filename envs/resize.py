"""Resize offers: a learned policy that grows and shrinks running jobs (``EnvConfig(elastic=True)``).

At a rebalance point of an elastic simulator (after the completions of an instant, while jobs run:
:data:`placer.sim.simulator.PULL`) and while no job waits in a queue, the running jobs are offered one at a time, at
most ``EnvConfig.resize_offers`` of them: those with the most seconds of work left first, and only a job that some
option would finish sooner than it will now (so a step is a real choice). A :class:`ResizeOffer` is an offer like an
arriving job's (:class:`placer.envs.action.Offer`): the job's graph, and the (degree, rule) options on the idle devices
and its own, each option's JCT being what resizing there would leave it (the pause when the devices change,
:func:`placer.sim.elastic.resize_pause_s`, plus its remaining iterations at that placement's iteration time) against the
time its deadline leaves. Action 0 keeps the job as it is; an option moves it (the same devices: kept). The mask opens
exactly the options :func:`placer.sim.elastic.plan_resizes` accepts, counting the devices earlier offers of the round
took or gave back. The round's resizes are carried out together once its last offer is answered.

An arriving (or waiting) job that no option on the idle devices admits is offered once more as a :class:`ShrinkOffer`
(:func:`arrival_offer`): on the idle devices and those the running jobs would give back, each shrunk to its *floor*
(:func:`floors`: the fewest devices, on the fastest subset of its own, at which it still meets its deadline, the pause
counted, as ElasticFlow's minimum share and ``elastic_lean``'s shrink-to-admit take it). An option that takes any of a
running job's given-back devices shrinks that job to its floor, all at once with the placement; action 0 rejects (or
holds) the job as before. So the policy decides whether an arrival is worth slowing running jobs for.

The env (:class:`placer.envs.env.ClusterPlacementEnv`) and the inference adapter (:class:`placer.policies.loading.LearnedPolicy`'s
``decide`` and ``rebalance``) both use :func:`arrival_offer` and :class:`ResizeRound`, so a trained policy resizes in
``placer evaluate`` as it did in training. The observation of either offer adds the ``resize`` features
(:func:`resize_features`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from placer.baselines.elastic_lean import fastest
from placer.envs import action as act
from placer.sim.elastic import RunningJob, resize_pause_s
from placer.sim.options import Option, OptionTable
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place, Reject, Resize, meets_deadline

RESIZE_FEATURES = 5
KEEP = 0  # the action that leaves the offered job as it is
LOOKED_AT = 2  # running jobs looked at per offer made at most: a job no option speeds up is passed over


@dataclass
class ResizeRound:
    """The resize offers of one rebalance point (module docstring): :meth:`next_offer` until None, :meth:`choose` after
    each; :attr:`resizes` then holds what to carry out (``Simulator.rebalanced``). ``max_degree`` and ``rules``: the
    options' degrees and placement rules (the policy's); ``offers``: at most this many offers."""

    view: ClusterView
    max_degree: int
    rules: tuple[str, ...]
    offers: int
    resizes: list[Resize] = field(default_factory=list)
    current: ResizeOffer | None = None
    _queue: list[RunningJob] = field(default_factory=list)
    _free: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _made: int = 0

    def __post_init__(self) -> None:
        now = self.view.now
        waiting = self.view.queue.enabled and bool(self.view.waiting)
        running = () if waiting else self.view.running_jobs  # a waiting job has the idle devices first
        self._queue = sorted(running, key=lambda r: (-(r.finish_s - now), r.job.job_id))
        self._free = self.view.free.copy()

    def next_offer(self) -> ResizeOffer | None:
        """The next job to decide (None: the round is over)."""
        self.current = None
        looked = 0
        while self._made < self.offers and self._queue and looked < LOOKED_AT * self.offers:
            running = self._queue.pop(0)
            looked += 1
            free = self._free.copy()
            free[list(running.devices)] = True  # its own devices, to keep or to move from
            offer = resize_offer(running, replace(self.view, free=free), self.max_degree, self.rules)
            if offer is not None:
                self._made += 1
                self.current = offer
                return offer
        return None

    def choose(self, action: int) -> Resize | None:
        """Answer the current offer with ``action`` (:data:`KEEP` or 1 + an option's index); the resize, if any."""
        offer = self.current
        if offer is None:
            raise RuntimeError("no resize offer is open: call next_offer() first")
        self.current = None
        resize = offer.resize(action)
        if resize is not None:
            self._free[list(offer.running.devices)] = True
            self._free[list(resize.devices)] = False
            self.resizes.append(resize)
        return resize


@dataclass(frozen=True)
class ResizeOffer:
    """One running job offered a resize: ``view`` has its own devices and the idle ones free, ``options`` are
    degree-major over degrees 1..max_degree x the rules (module docstring)."""

    running: RunningJob
    view: ClusterView
    options: tuple[Option, ...]

    @property
    def job(self) -> Job:
        return self.running.job

    def resize(self, action: int) -> Resize | None:
        """What ``action`` does: None to keep the job (:data:`KEEP`, an option on its own devices, or one the mask closes:
        as an arriving job given a closed option is blocked, a running job given one stays as it is)."""
        option = self.options[action - 1] if 0 < action <= len(self.options) else None
        if option is None or not option.feasible or option.devices is None or set(option.devices) == set(self.running.devices):
            return None
        return Resize(self.running.job.job_id, option.devices)


def rebalance_choice(policy, offer: ResizeOffer) -> Decision:
    """What ``policy``'s ``rebalance`` does with ``offer``'s job on the round's cluster as it stands (the job holding its
    own devices; earlier offers' resizes taken): ``Place`` on the devices it moves the job to, or ``Reject`` where it keeps
    it. A policy that is not elastic keeps every job. Reads the policy's run state, writes none."""
    if not getattr(policy, "elastic", False):
        return Reject()
    free = offer.view.free.copy()
    free[list(offer.running.devices)] = False
    moved = {r.job_id: r.devices for r in policy.rebalance(replace(offer.view, free=free))}
    devices = moved.get(offer.job.job_id)
    return Reject() if devices is None else Place(devices)


def resize_offer(running: RunningJob, view: ClusterView, max_degree: int, rules: tuple[str, ...]) -> ResizeOffer | None:
    """``running``'s offer on ``view`` (its own devices free there) over degrees 1..``max_degree`` x ``rules``, or None
    when no option finishes it sooner."""
    job, now, cost = running.job, view.now, view.cost
    table = OptionTable(job, view, range(1, min(max_degree, view.cluster.num_devices) + 1), rules, max_degree)
    left, remaining = job.remaining_s(now), running.remaining(now)
    own, pause = frozenset(running.devices), resize_pause_s(view.cluster, job.graph)
    options, sooner = [], False
    for option in table:
        if option.devices is None or option.jct_s is None:
            options.append(option._replace(deadline_s=left))
            continue
        moved = frozenset(option.devices) != own
        iteration_s = cost.predict(job.graph, option.devices).iteration_s  # what plan_resizes prices, bit for bit
        jct = (now + (pause if moved else 0.0) + remaining * iteration_s) - now  # finish - now, as plan_resizes checks it
        resized = option._replace(jct_s=jct, deadline_s=left)
        options.append(resized)
        sooner |= moved and resized.feasible and now + jct < running.finish_s
    return ResizeOffer(running, view, tuple(options)) if sooner else None


@dataclass(frozen=True)
class ShrinkOffer:
    """An arriving job no option on the idle devices admits, offered on ``view`` (the idle devices and those ``floors``
    give back free); ``floors``: running job id -> (its devices now, its devices at its floor, a subset of them);
    ``options`` as an arriving job's (module docstring)."""

    job: Job
    view: ClusterView
    options: Sequence[Option]  # the lazy table of an arriving job's offer
    floors: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]]

    @property
    def released(self) -> int:
        """How many devices the floors give back, in all."""
        return sum(len(own) - len(floor) for own, floor in self.floors.values())

    def decision(self, action: int) -> Decision:
        """What ``action`` does: the arriving job placed, with every running job whose given-back devices it takes shrunk
        to its floor; or rejected (held)."""
        chosen = act.decision(action, self.options)
        if not isinstance(chosen, Place) or not chosen.devices:
            return chosen
        taken = set(chosen.devices)
        resizes = tuple(Resize(jid, floor) for jid, (own, floor) in self.floors.items() if taken & (set(own) - set(floor)))
        return Place(chosen.devices, resizes)


def floors(view: ClusterView, rules: tuple[str, ...]) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Running job id -> (its devices, its devices at its floor) for each running job whose floor is below its degree:
    the fewest devices (tried from 1 up), on the fastest subset of its own among ``rules``, at which, resized now (the
    pause counted), it still meets its deadline."""
    out = {}
    now, cost = view.now, view.cost
    for running in view.running_jobs:
        own = np.zeros(view.cluster.num_devices, dtype=bool)
        own[list(running.devices)] = True
        job, pause, left = running.job, resize_pause_s(view.cluster, running.job.graph), running.job.remaining_s(now)
        for degree in range(1, running.degree):
            choice = fastest(cost, job.graph, own, (degree,), rules, running.devices).get(degree)
            if choice is None:
                continue
            iteration_s = cost.predict(job.graph, choice[0]).iteration_s  # what plan_resizes prices, bit for bit
            if meets_deadline(running.finish_if_resized(now, iteration_s, pause) - now, left):
                out[running.job.job_id] = (running.devices, choice[0])
                break
    return out


@dataclass
class Floors:
    """:func:`floors` of a view, the last answer kept while the time and the running jobs stay the same (a queue offers
    several waiting jobs against one state of the cluster)."""

    rules: tuple[str, ...]
    _key: tuple | None = None
    _last: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)

    def __call__(self, view: ClusterView) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
        key = (view.now, tuple((r.job.job_id, r.devices, r.finish_s) for r in view.running_jobs))
        if key != self._key:
            self._key, self._last = key, floors(view, self.rules)
        return self._last


def arrival_offer(
    job: Job, view: ClusterView, max_degree: int, rules: tuple[str, ...], shrink: Floors | None
) -> act.Offer | ShrinkOffer | None:
    """The offer of an arriving (or waiting) ``job``: on the idle devices where some option is feasible; else, given
    ``shrink`` (elastic), a :class:`ShrinkOffer` where some option is feasible once the running jobs give back what
    their floors release; else None (nothing admits it: rejected or held without a step)."""
    if act.any_option(job, view, max_degree, rules):
        return act.Offer(job, view, act.option_table(job, view, max_degree, rules))
    if shrink is None or not view.running_jobs:
        return None
    given = shrink(view)
    if not given:
        return None
    free = view.free.copy()
    for own, floor in given.values():
        free[list(set(own) - set(floor))] = True
    wider = replace(view, free=free)
    if not act.any_option(job, wider, max_degree, rules):
        return None
    return ShrinkOffer(job, wider, act.option_table(job, wider, max_degree, rules), given)


def resize_features(offer: act.Offer | ResizeOffer | ShrinkOffer, max_degree: int) -> np.ndarray:
    """(RESIZE_FEATURES,) float32: 1 for a resize offer (0 for an arriving job's); the fraction of its iterations done;
    its degree / max_degree; its slack, (time its deadline leaves - time it still needs) / deadline, in [0, 1]; and, for
    an arriving job's :class:`ShrinkOffer`, the fraction of the cluster's devices the running jobs' floors give back
    (else 0). An arriving job's plain offer: all 0."""
    out = np.zeros(RESIZE_FEATURES, dtype=np.float32)
    if isinstance(offer, ShrinkOffer):
        out[4] = offer.released / max(offer.view.cluster.num_devices, 1)
    if not isinstance(offer, ResizeOffer):
        return out
    running, now = offer.running, offer.view.now
    job = running.job
    deadline = max(job.deadline_s, 1e-9)
    slack = (job.remaining_s(now) - (running.finish_s - now)) / deadline
    done = running.iterations_done(now) / max(job.iterations, 1)
    out[:4] = [1.0, done, running.degree / max_degree, min(max(slack, 0.0), 1.0)]
    return out
