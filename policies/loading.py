"""The learned policy as a placer policy (``placer evaluate --policies learned``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from threadpoolctl import threadpool_limits

from placer.baselines.guard import Guarded
from placer.baselines.policy import Policy
from placer.baselines.registry import PolicyContext, make_heuristic
from placer.baselines.specs import PolicySpec, names_a_file, positive_finite, positive_int
from placer.common.errors import PolicyError
from placer.common.lru import LRUCache
from placer.common.shipped import default_policy_file, policy_names, shipped_policy_file
from placer.envs.action import action_mask, decision, option_table
from placer.envs.advice import Advisers
from placer.envs.config import EnvConfig
from placer.envs.observation import GRAPH_KEYS, UNLISTED, GraphRef, JobHistory, Offer, forward_size, graph_arrays, observe
from placer.envs.resize import Floors, ResizeRound, ShrinkOffer, arrival_offer
from placer.policies.inference import NumpyPolicy, load_inference_policy
from placer.sim.options import Option, OptionTable
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Reject, Resize

if TYPE_CHECKING:
    import torch

    from placer.cluster.topology import Cluster

GRAPH_CACHE_SIZE = 512
# learned:below=L, :last=K, :waiting=W (Guarded)
GATE_ARGUMENTS = {"below": positive_finite, "last": positive_finite, "waiting": positive_int}


class LearnedPolicy(Policy):
    """Picks the most likely unmasked action of a trained policy (deterministic).

    ``rules`` replaces the placement rules with one fixed rule for every degree (the
    ablation "learned degree, first-fit placement"): the policy's choice among degrees is kept
    and its placement choice is overridden.

    :meth:`decide` is the simulator's hook: it records the offered job in the run's ``history`` and
    calls :meth:`choose`, which decides an :class:`placer.envs.observation.Offer` given that history, through the
    same observation builder as the env. Each graph is encoded once and its encoding cached by the
    graph's key, so graphs in no table (the service's) work as well as the training graphs.

    ``policy``: the network as a :class:`~placer.policies.inference.NumpyPolicy` (:meth:`from_file` reads one without
    torch), or a live torch policy (training's validation), whose weights are copied now: build a new
    LearnedPolicy after training more. Decisions run in numpy either way (:mod:`placer.policies.inference`), on one BLAS
    thread: building a LearnedPolicy limits the process's BLAS to one thread (threadpoolctl), since its matmuls are a
    few dozen rows and threads only spin (a validation stream at load 1.3 ran 2.6x slower beside two busy processes).
    """

    def __init__(self, policy: NumpyPolicy | Any, env: EnvConfig, spec: PolicySpec | None = None, rule_override: str | None = None) -> None:
        threadpool_limits(1, user_api="blas")
        self.policy = policy if isinstance(policy, NumpyPolicy) else NumpyPolicy.from_module(policy, env)
        self.env = env
        self._floors = Floors(env.rules) if env.elastic else None  # elastic: what running jobs can give back (one run's)
        self.spec = spec or PolicySpec("learned")
        self.rule_override = rule_override
        if rule_override is not None and rule_override not in self.env.rules:
            raise PolicyError(f"placement rule {rule_override!r} is not one of the policy's {self.env.rules}")
        self.history = JobHistory()  # the jobs seen in this run: the job features are relative to them
        self.advisers = Advisers(env.advisers, env.max_degree)  # the heuristics whose decisions it observes (placer.envs.advice)
        self.actor = self.policy.actor
        self._graphs: LRUCache[str, tuple[np.ndarray, GraphRef]] = LRUCache(GRAPH_CACHE_SIZE)  # bounded for long-running services
        self._scored: tuple[Sequence[Option], np.ndarray] | None = None  # the last offer's options and their logits

    @classmethod
    def from_file(cls, path: Path, spec: PolicySpec | None = None, rule_override: str | None = None) -> LearnedPolicy:
        """The policy of the policy file at ``path`` (PolicyError, one line, if it cannot be read or does not fit); one
        trained to resize running jobs (``elastic``) is an :class:`ElasticLearnedPolicy`."""
        policy, env = load_inference_policy(path)
        return cls.of(policy, env, spec, rule_override)

    @staticmethod
    def of(policy: NumpyPolicy | Any, env: EnvConfig, spec: PolicySpec | None = None, rule_override: str | None = None) -> LearnedPolicy:
        """The learned policy of ``policy`` trained on ``env``: an :class:`ElasticLearnedPolicy` where ``env.elastic``."""
        return (ElasticLearnedPolicy if env.elastic else LearnedPolicy)(policy, env, spec, rule_override)

    def reset(self, rng: np.random.Generator) -> None:
        self.history = JobHistory()
        self.advisers.reset()

    def decide(self, job: Job, view: ClusterView) -> Decision:
        """Record ``job`` in this run's history, put it to the advisers, and choose among its options (:meth:`offer`);
        where only reject is open the advisers record the offer without answering (nobody reads their answers)."""
        self.history.observe(job)
        offer = self.offer(job, view)
        if offer is None or not _any_open(offer.options):
            self.advisers.observe(job, view)
            self._scored = None
            return Reject()
        return self.choose(offer, self.history, self.advisers.advise(job, view))

    def screen(self, cluster: Cluster) -> tuple[int, tuple[str, ...]] | None:
        """Its option table's degrees and rules, where :meth:`decide` rejects what has no feasible option there unasked
        (not elastic, whose offers widen by shrinking, and with advisers that answer in the engine)."""
        if self._floors is not None or not self.advisers.screenable(cluster):
            return None
        return self.env.max_degree, self.env.rules

    def observe_screened(self, jobs: Sequence[Job], log: np.ndarray, view: ClusterView) -> None:
        """:meth:`decide` on offers with nothing feasible, all at once: the history and the advisers record them."""
        for job in jobs:
            self.history.observe(job)
        self.advisers.observe_screened(log, view)
        self._scored = None

    def offer(self, job: Job, view: ClusterView) -> Offer | ShrinkOffer | None:
        """What ``job`` is offered on arrival: its option table on ``view`` as it stands (None: nothing to choose)."""
        return Offer(job, view, option_table(job, view, self.env.max_degree, self.env.rules))

    def choose(self, offer: Offer | ShrinkOffer, history: JobHistory, advice: tuple[Decision, ...] = ()) -> Decision:
        """The decision for ``offer`` given the run's ``history`` (which holds ``offer.job``) and each adviser's decision on
        it (:meth:`placer.envs.advice.Advisers.advise`; a policy with advisers refuses none); writes nothing but the encoding cache."""
        env = self.env
        self._scored = None
        mask = action_mask(offer.options, env.max_degree, len(env.rules))
        if mask.sum() == 1:
            return decision(0, offer.options)  # only reject (or hold) is open: no need to ask the network
        encoding, graph = self._graph(offer.job)
        logits = self.actor.logits(encoding, observe(offer, history, env, graph, advice), mask)
        action = int(np.argmax(logits))  # the first of the highest: as NumpyActor.act
        if self.rule_override is not None and action > 0:
            rules = len(env.rules)
            degree_block = (action - 1) // rules
            action = 1 + degree_block * rules + env.rules.index(self.rule_override)
        elif not isinstance(offer, ShrinkOffer):  # its options only: a policy holds no cluster view past its decision
            self._scored = (offer.options, logits)
        return _decision_of(offer, action)

    def estimates(self) -> Sequence[tuple[Decision, float]]:
        """The network's open actions at the last offer it was asked about, each with minus its log-probability (nats):
        an imitation's soft targets at temperature 1 are then this policy's own distribution
        (:func:`placer.policies.imitation.teacher_targets`). Empty where it was not asked (one action open), a placement rule
        overrides its choice, or the offer was a shrink offer (an elastic policy's)."""
        if self._scored is None:
            return ()
        options, logits = self._scored
        actions = np.flatnonzero(np.isfinite(logits))
        scores = logits[actions].astype(np.float64)
        log_p = scores - scores.max() - np.log(np.exp(scores - scores.max()).sum())
        return [(decision(int(a), options), float(-lp)) for a, lp in zip(actions, log_p, strict=True)]

    def _graph(self, job: Job) -> tuple[np.ndarray, GraphRef]:
        """The GNN's encoding of the job's graph (2 * hidden,) and its :class:`GraphRef` (in no table), once per graph key."""
        cached = self._graphs.get(job.graph.key)
        if cached is None:
            nodes, edges = forward_size(job.graph)
            arrays = graph_arrays(job.graph, max(nodes, 1), max(edges, 1))
            encoding = self.policy.encoder.encode(*(arrays[k] for k in GRAPH_KEYS))
            cached = self._graphs[job.graph.key] = (encoding, GraphRef(UNLISTED, nodes))
        return cached


class ElasticLearnedPolicy(LearnedPolicy):
    """A learned policy trained with ``EnvConfig(elastic=True)``: its runs are elastic, and after completions it answers
    the resize offers of :class:`placer.envs.resize.ResizeRound` as the env offered them in training."""

    elastic: ClassVar[bool] = True

    def reset(self, rng: np.random.Generator) -> None:
        super().reset(rng)
        self._floors = Floors(self.env.rules)

    def offer(self, job: Job, view: ClusterView) -> Offer | ShrinkOffer | None:
        """As a fixed-degree policy's, but a job nothing idle admits is offered on what running jobs would give back
        (:func:`placer.envs.resize.arrival_offer`), as in training."""
        return arrival_offer(job, view, self.env.max_degree, self.env.rules, self._floors)

    def rebalance(self, view: ClusterView) -> Sequence[Resize]:
        env = self.env
        round_ = ResizeRound(view, env.max_degree, env.rules, env.resize_offers)
        while (offer := round_.next_offer()) is not None:
            mask = action_mask(offer.options, env.max_degree, len(env.rules))
            encoding, graph = self._graph(offer.job)
            advice = self.advisers.advise_resize(offer)
            round_.choose(self.actor.act(encoding, observe(offer, self.history, env, graph, advice), mask))
        return round_.resizes


def _decision_of(offer: Offer | ShrinkOffer, action: int) -> Decision:
    """The decision ``action`` stands for at ``offer``."""
    return offer.decision(action) if isinstance(offer, ShrinkOffer) else decision(action, offer.options)


def greedy_action(policy, obs: dict[str, np.ndarray], mask: np.ndarray, graph: torch.Tensor | None = None) -> int:
    """The most likely unmasked action of a torch ``policy`` for one observation: masked argmax of the logits.

    The torch path (imitation, tests): no gradients, no distribution objects, one forward pass. ``graph``:
    the job graph's (1, 2 * hidden) encoding, when known (else the policy's graph table encodes ``obs["graph"]``).
    """
    import torch

    with torch.inference_mode():
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)).unsqueeze(0).float() for k, v in obs.items()}
        extractor = policy.pi_features_extractor
        features = extractor(batch) if graph is None else extractor.forward_with_graph(graph, batch)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))[0]
        logits[~torch.from_numpy(mask)] = -torch.inf
        return int(torch.argmax(logits))


def shipped_policy_names() -> list[str]:
    """The names ``learned:NAME`` runs: the policies of ``data/policies`` (:func:`placer.common.shipped.shipped_policy_file`);
    any other policy file is named by its path (``learned=LABEL:PATH.pt``)."""
    return policy_names()


def make_learned_policy(spec: PolicySpec, context: PolicyContext) -> LearnedPolicy | Guarded:
    """Entry point ``learned``: the policy of ``--policy-file`` (default: :func:`default_policy_file`); ``learned:NAME``
    the shipped policy ``NAME``; ``learned:PATH`` (a path with a ``/`` or ending ``.pt``: :func:`names_a_file`) the policy
    file at ``PATH``, one of one's own, usually labelled (``learned=mine:runs/a/policy.pt``);
    ``learned+RULE`` the fixed-placement ablation; ``:below=L`` (``learned:below=1.1``,
    ``learned:default:below=1.1``) the policy whose holds, while the measured load is under ``L``, are placed as
    ``adaptive`` places them (:class:`~placer.baselines.guard.Guarded`; tuned, as ``adaptive`` is, by ``placer evaluate``);
    ``:last=K`` only those holds of a job with less than K times the JCT of that placement left before its deadline;
    ``:waiting=W`` only holds made while at most W jobs wait, the held one included."""
    path = Path(context.policy_file) if context.policy_file else default_policy_file()
    shipped = shipped_policy_names()

    def shipped_name(text: str) -> str:
        if text not in shipped and not names_a_file(text):
            raise ValueError(text)
        return text

    arguments = spec.arguments(GATE_ARGUMENTS, shipped_name, optional=True)
    if arguments is None:
        names = ", ".join(policy_names())
        usage = (
            f"use learned (its --policy-file), learned:NAME, NAME one of {names}, or learned:PATH.pt (a file of one's own), "
            "optionally :below=L, :last=K (L, K > 0) and :waiting=W (W >= 1)"
        )
        raise PolicyError(f"unknown policy {str(spec)!r}: {usage}")
    if None in arguments:
        value = arguments[None]
        path = Path(value) if names_a_file(value) else shipped_policy_file(value)
    if not path.exists():
        raise PolicyError(f"policy file {str(path)!r} does not exist (train one with 'placer train' or pass --policy-file)")
    learned = LearnedPolicy.from_file(path, spec=spec, rule_override=spec.rule)
    if not GATE_ARGUMENTS.keys() & arguments.keys():
        return learned
    if learned.elastic:
        raise PolicyError(f"{str(spec)!r}: a gate (:below, :last, :waiting) places holds, not resizes: not for a policy trained elastic")
    adaptive = make_heuristic("adaptive", max_degree=context.max_degree)
    return Guarded(
        learned, adaptive, arguments.get("below", math.inf), spec=spec, last=arguments.get("last"), waiting=arguments.get("waiting")
    )


def _any_open(options: Sequence[Option]) -> bool:
    """Whether an action besides reject is open on ``options`` (:func:`action_mask` beyond its first entry)."""
    if isinstance(options, OptionTable):
        return bool(options.feasible.any())
    return any(option.feasible for option in options)
