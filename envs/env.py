"""The Gymnasium environment: one step = one arriving job (a thin adapter over the simulator)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

from placer.baselines.policy import Policy
from placer.cluster.topology import load_cluster
from placer.common.errors import EnvConfigError
from placer.cost import CostModel
from placer.envs import action as act
from placer.envs import register
from placer.envs.advice import Advisers
from placer.envs.baseline import StreamBaseline, baseline_for, baseline_policy
from placer.envs.config import EnvConfig
from placer.envs.observation import GraphTable, JobHistory, Offer, observation_space, observe
from placer.envs.regime import Regime
from placer.envs.resize import Floors, ResizeOffer, ResizeRound, ShrinkOffer, arrival_offer
from placer.envs.reward import reward
from placer.graphs.job_graph import JobGraph
from placer.sim.engine.program import external
from placer.sim.engine.session import EngineSimulator
from placer.sim.engine.stream import supported
from placer.sim.queueing import QueueConfig
from placer.sim.simulator import PULL, Simulator
from placer.sim.types import Decision, Job, Place, Reject

register()  # the id, even where the hook of envs/__init__ never saw gymnasium imported (another import hook found it first)

T = TypeVar("T")
R = TypeVar("R")


def cost_models_for(config: EnvConfig) -> list[CostModel]:
    """One cost model per cluster of ``config``, in order: what envs of one process may share (``cost_models=``; their
    caches are exact, so sharing changes no result and fills them once)."""
    return [CostModel(load_cluster(c), strategy=config.strategy) for c in config.all_clusters]


def regimes(config: EnvConfig) -> list[Regime]:
    """Every regime an episode of ``config`` may draw (of each of its settings, each once, in the settings' order)."""
    return list(dict.fromkeys(regime for variant in config.variants for regime in _variant_regimes(variant)))


def variant_of(config: EnvConfig, regime: Regime) -> EnvConfig:
    """The variant of ``config`` (:attr:`EnvConfig.variants`) that draws ``regime`` (one of :func:`regimes`), the first."""
    return next(v for v in config.variants if regime in _variant_regimes(v))


def _variant_regimes(config: EnvConfig) -> list[Regime]:
    workload = config.workload
    clusters = [load_cluster(c).name for c in config.clusters]
    parsed = (workload.betas, workload.queues, workload.sizes, workload.structures)
    betas, queues, sizes, structures = ([item.spec for item in items] for items in parsed)
    rows = itertools.product(clusters, config.load_values, betas, queues, sizes, structures)
    return [Regime(*row) for row in rows]


def check_heuristics(config: EnvConfig) -> None:
    """Refuse, in one line, a ``config.baseline`` or ``config.advisers`` that a reset would: a heuristic that needs tuning,
    a baseline table that names no heuristic for some regime of ``config``, or an adviser that would read the future
    (a clairvoyant planner) or place by a rule the observation's options lack (its advice would never show)."""
    if config.baseline is None and not config.advisers:
        return
    cluster = load_cluster(config.clusters[0])
    for name in config.advisers:
        adviser = baseline_policy(name, cluster, config.max_degree, "adviser")
        if type(adviser).foresee is not Policy.foresee:
            raise EnvConfigError(f"adviser {name!r} is told the stream to come: an observation may not show the future")
        rule = getattr(adviser, "rule", None)
        if rule is not None and rule not in config.rules:
            raise EnvConfigError(f"adviser {name!r} places by {rule!r}, not one of the options' rules {', '.join(config.rules)}")
    if config.baseline is None:
        return
    names = {baseline_for(config.baseline, regime) for regime in regimes(config)}
    for name in sorted(names):
        baseline_policy(name, cluster, config.max_degree)


def _checked(cost_models: Sequence[CostModel], config: EnvConfig) -> list[CostModel]:
    """``cost_models`` if they are ``config``'s clusters, in order, with its strategy (else one line)."""
    wanted = [load_cluster(c).name for c in config.all_clusters]
    given = [getattr(getattr(c, "cluster", None), "name", None) for c in cost_models]
    if given != wanted or any(getattr(c, "strategy", None) != config.strategy for c in cost_models):
        raise EnvConfigError(f"cost_models are for clusters {given}, not the config's {wanted} with strategy {config.strategy!r}")
    return list(cost_models)


@dataclass(frozen=True)
class _Draws:
    """What ``reset`` draws from for one variant of the config (:attr:`EnvConfig.variants`): its workload's beta
    distributions, queues, sizes and structures, its loads, and these graphs and cost models."""

    config: EnvConfig
    graphs: tuple[JobGraph, ...]
    costs: tuple[CostModel, ...]


def stepped_simulator(
    cost: CostModel, stream: Sequence, queue: QueueConfig, elastic: bool, screen: tuple[int, tuple[str, ...]] | None = None
) -> Simulator | EngineSimulator:
    """The simulator an episode steps: the compiled engine's (:class:`~placer.sim.engine.session.EngineSimulator`,
    screening its offers by ``screen`` where given) wherever it runs the stream, the reference's when resizes are on
    (the engine has none) or the stream is one it cannot key (:func:`~placer.sim.engine.stream.supported`)."""
    if not elastic and supported(cost, stream, external(cost.cluster.num_devices)):
        return EngineSimulator(cost, stream, queue=queue, screen=screen)
    return Simulator(cost, stream, queue=queue, rebalance=PULL if elastic else None)


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    """One of ``items``, uniformly (no draw when there is one: a config's streams do not change when a list of one is
    given)."""
    return items[int(rng.integers(len(items)))] if len(items) > 1 else items[0]


class ClusterPlacementEnv(gym.Env):
    """Pick a partitioning degree and a placement for each arriving job.

    Keyword arguments are the fields of :class:`placer.envs.config.EnvConfig`, and ``cost_models`` (:func:`cost_models_for`
    ``config``'s, shared with other envs of the process). Spaces: see
    :mod:`placer.envs.observation` and :mod:`placer.envs.action`. With a queue one step is one offer of a waiting
    job (action 0 holds it). Offers with nothing feasible are rejected (held) without a step: every
    step is a real choice. The reward sums over every job settled since the last step (started,
    or blocked: rejected, expired, queue full). ``info`` of a step holds the offered job's
    ``record`` (:class:`placer.sim.types.JobRecord`, None when held) and ``settled`` (the records
    behind the reward). Seed only through ``reset(seed=...)``.

    ``elastic=True`` (:mod:`placer.envs.resize`): a step may instead offer a running job a resize (``offer`` is then a
    :class:`~placer.envs.resize.ResizeOffer`; action 0 keeps it); the resizes of a rebalance point are carried out after its
    last offer, and that step's reward adds the change they make to the resized jobs' rewards (an earlier finish).

    Public state for teachers and tests: ``offer`` (the job, cluster view and option table the
    current step decides), ``history`` (the run's jobs seen so far, every offered job once) and
    ``graph_table`` (the graphs observations name by id, in ``config.workload.graphs`` order).
    """

    action_space: gym.spaces.Discrete

    metadata = {"render_modes": []}

    def __init__(self, config: EnvConfig | None = None, *, cost_models: Sequence[CostModel] | None = None, **kwargs: Any) -> None:
        config = config or EnvConfig()
        self.config = config = config.with_changes(**kwargs) if kwargs else config
        self.costs = _checked(cost_models, config) if cost_models is not None else cost_models_for(config)
        self.cost = self.costs[0]
        self.graph_table = GraphTable.from_config(config)  # every graph's arrays, once: observations hold its id
        self.graphs = list(self.graph_table.graphs)
        costs = dict(zip(config.all_clusters, self.costs, strict=True))
        graphs = dict(zip(config.workload.graphs, self.graphs, strict=True))  # a setting's graphs are some of the table's
        self._draws = tuple(
            _Draws(variant, tuple(graphs[g] for g in variant.workload.graphs), tuple(costs[c] for c in variant.clusters))
            for variant in config.variants
        )
        self.num_options = config.max_degree * len(config.rules)
        self.observation_space = observation_space(
            len(self.graph_table), self.num_options, config.max_groups, config.history, config.meter, len(config.advisers), config.elastic
        )
        self.action_space = gym.spaces.Discrete(act.num_actions(config.max_degree, len(config.rules)))
        self._mean_seq = float(np.mean([self.cost.sequential_jct_s(g) for g in self.graphs]))  # reward scale
        check_heuristics(config)
        self._baselines: dict[tuple[str, str], Policy] = {}  # (heuristic, cluster) -> the baseline, built on first use
        self._baseline: StreamBaseline | None = None
        self.advisers = Advisers(config.advisers, config.max_degree)  # put every offer; their decisions are observed
        self._advice: tuple[Decision, ...] = ()
        self._potential = self._settled_baseline = 0.0  # the baseline's potential at the current state, its reward so far
        self.sim: Simulator | EngineSimulator | None = None
        self.stream: tuple = ()
        self.job: Job | None = None
        self._offer: Offer | ResizeOffer | ShrinkOffer | None = None
        self._history = JobHistory()
        self._round: ResizeRound | None = None  # elastic: the rebalance point being answered
        self._resized = 0.0  # elastic: the reward change the last carried-out resizes made
        self._floors = Floors(config.rules) if config.elastic else None  # elastic: what running jobs can give back

    @property
    def offer(self) -> Offer | ResizeOffer | ShrinkOffer:
        """What the current step decides (after the episode: its last offer)."""
        if self._offer is None:
            raise RuntimeError("call reset() before reading the offer")
        return self._offer

    @property
    def advice(self) -> tuple[Decision, ...]:
        """The advisers' decisions on the current offer (:mod:`placer.envs.advice`; empty without advisers)."""
        return self._advice

    @property
    def history(self) -> JobHistory:
        """The episode's jobs seen so far: every offered job, with a step or rejected without one."""
        return self._history

    # -- gymnasium API ----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        draws = _pick(rng, self._draws)  # a setting (none drawn without settings), then the regime within it
        w = draws.config.workload
        self.cost = _pick(rng, draws.costs)
        beta = w.betas[int(rng.integers(len(w.betas)))]
        queue, size, structure = _pick(rng, w.queues), _pick(rng, w.sizes), _pick(rng, w.structures)
        load = _pick(rng, draws.config.load_values)
        devices = self.cost.cluster.num_devices
        workload = w.stream(list(draws.graphs), beta, devices, self.cost.sequential_iteration_s, size, structure, load)
        self.stream = tuple(workload.jobs(rng))  # the episode's jobs: for a clairvoyant teacher, never observed
        screen = (self.config.max_degree, self.config.rules) if self.advisers.screenable(self.cost.cluster) else None
        self.sim = stepped_simulator(self.cost, self.stream, queue, self.config.elastic, screen)
        self._history = JobHistory()
        self._round, self._resized = None, 0.0
        self.advisers.reset()
        self._settled = 0
        self.job = self._next_choice()
        if self.job is None:
            raise EnvConfigError("no job of the episode had a feasible choice (raise the load or loosen the deadlines)")
        info = {
            "beta_dist": beta.spec,
            "cluster": self.cost.cluster.name,
            "queue": queue.spec,
            "size": size.spec,
            "structure": structure.spec,
            "load": load,
        }
        self._baseline = self._stream_baseline(info, queue) if self.config.baseline else None
        self._settled_baseline = 0.0  # the baseline's reward for the jobs settled so far
        self._potential = self._baseline.potential(self.sim.now, 0.0) if self._baseline is not None else 0.0
        return self._observe(), info

    def step(self, action):
        if self.sim is None or self.job is None:
            raise RuntimeError("call reset() before step()")
        if self._round is not None:  # a resize offer: kept or moved, carried out with the round's others
            self._round.choose(int(action))
            record = None
        elif isinstance(offer := self.offer, ShrinkOffer):  # placed by shrinking running jobs, or rejected
            decision = offer.decision(int(action))
            shrunk = [r.job_id for r in decision.resizes] if isinstance(decision, Place) else []
            record = self._resizing(shrunk, lambda: self.sim.decide(decision))
        else:
            record = self.sim.decide(act.decision(int(action), offer.options))
        self.job = self._next_choice()
        terminated = self.job is None
        if terminated:
            self.sim.run()
        settled = self.sim.records[self._settled :]  # every job decided for good since the last step
        self._settled = len(self.sim.records)
        r = sum(reward(self.config.reward, done, self._mean_seq) for done in settled) + self._resized
        self._resized = 0.0
        if (baseline := self._baseline) is not None:  # shaped by the baseline heuristic's potential (placer.envs.baseline)
            self._settled_baseline += sum(baseline.rewards[done.job_id] for done in settled)
            potential = 0.0 if terminated else baseline.potential(self.sim.now, self._settled_baseline)
            r += self.config.baseline_discount * potential - self._potential
            self._potential = potential
        obs = self._observe() if not terminated else {k: v.copy() for k, v in self._last_obs.items()}
        return obs, float(r), terminated, False, {"record": record, "settled": settled}

    def action_masks(self) -> np.ndarray:
        """(num_actions,) bool: reject and exactly the feasible (degree, rule) choices."""
        options = self._offer.options if self._offer is not None else ()
        return act.action_mask(options, self.config.max_degree, len(self.config.rules))

    # -- internals --------------------------------------------------------------------
    def _next_choice(self) -> Job | None:
        """The next offered job with a feasible option (offers with none are rejected or held without a step), or, elastic,
        the next running job offered a resize (its job)."""
        sim = self.sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        while True:
            if self._round is not None:
                if (offer := self._round.next_offer()) is not None:
                    self._offer, self._advice = offer, self.advisers.advise_resize(offer)
                    return offer.job
                self._carry_out(self._round)
            point = sim.next_decision()
            screened = self._observe_screened(sim)  # the offers the engine rejected unasked, as the loop below would
            if point is None:
                return None
            if not isinstance(point, Job):  # a rebalance point (elastic)
                cfg = self.config
                self._round = ResizeRound(point, cfg.max_degree, cfg.rules, cfg.resize_offers)
                continue
            job = point
            self._history.observe(job)
            view = sim.view()
            if screened:  # the engine offers only jobs with a feasible option
                self._advice = self.advisers.advise(job, view)
                self._offer = act.Offer(job, view, act.option_table(job, view, self.config.max_degree, self.config.rules))
                return job
            arriving = arrival_offer(job, view, self.config.max_degree, self.config.rules, self._floors)
            if arriving is not None:
                self._advice = self.advisers.advise(job, view)
                self._offer = arriving
                return job
            self.advisers.observe(job, view)  # nothing feasible: no step, and no answer to read
            sim.decide(Reject())

    def _observe_screened(self, sim: Simulator | EngineSimulator) -> bool:
        """Observe the offers ``sim`` screened out since the last step (nothing feasible), in order: the history
        sees each job, the advisers each offer. False where ``sim`` does not screen."""
        if not isinstance(sim, EngineSimulator) or not sim.screening:
            return False
        log = sim.screened()
        if len(log):
            for job_id in log[:, 0].tolist():
                self._history.observe(sim.job(job_id))
            self.advisers.observe_screened(log, sim.view())
        return True

    def _carry_out(self, round_: ResizeRound) -> None:
        """Answer the rebalance point with ``round_``'s resizes; their change to the resized jobs' rewards is the next
        step's."""
        sim = self.sim
        assert sim is not None
        self._resizing([r.job_id for r in round_.resizes], lambda: sim.rebalanced(round_.resizes))
        self._round = None

    def _resizing(self, ids: Sequence[int], act_on: Callable[[], R]) -> R:
        """``act_on()``'s result; the change it makes to the rewards of the running jobs ``ids`` (resized by it) is added
        to the next step's reward."""
        sim = self.sim
        assert sim is not None
        before = sum(reward(self.config.reward, sim.record_of(i), self._mean_seq) for i in ids)
        out = act_on()
        self._resized += sum(reward(self.config.reward, sim.record_of(i), self._mean_seq) for i in ids) - before
        return out

    def _stream_baseline(self, info: dict[str, Any], queue: QueueConfig) -> StreamBaseline:
        """The baseline heuristic of the episode (``config.baseline``: one name, or one per regime) run on its stream."""
        name = baseline_for(self.config.baseline, Regime.from_info(info))
        key = (name, self.cost.cluster.name)
        if key not in self._baselines:
            self._baselines[key] = baseline_policy(name, self.cost.cluster, self.config.max_degree)
        cfg = self.config
        per_arrival = cfg.baseline_arrival_discount or cfg.baseline_discount
        return StreamBaseline.of_run(self._baselines[key], self.cost, self.stream, queue, cfg.reward, self._mean_seq, per_arrival)

    def _observe(self) -> dict[str, np.ndarray]:
        offer = self.offer
        obs = observe(offer, self._history, self.config, self.graph_table.ref(offer.job.graph), self._advice)
        self._last_obs = obs
        return obs
