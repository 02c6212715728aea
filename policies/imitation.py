"""Warm start: behaviour cloning of a heuristic before reinforcement learning.

``collect`` runs the environment with a heuristic teacher choosing, and records each decision
as the action whose option gives the teacher's devices, with the teacher's discounted return from
that step on, and soft targets: for a planner (``lookahead``, ``hindsight``) that rolled out
several candidates, a softmax over them of minus the jobs each is estimated to block
(temperature in jobs), so the student learns how much better a choice is, not only which won.
``clone`` fits the policy's masked logits to those actions (cross-entropy; or to the soft
targets), then its value head to those returns (mean squared error). PPO then starts from a policy as good as the
teacher and a critic that already knows what the teacher's states are worth, instead of from
noise (a random critic's advantages would first pull the policy anywhere). Observations name their
graph by id (:mod:`placer.envs.observation`): the policy's graph table holds the arrays.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from placer.common.pool import results_in_order, spawn_pool
from placer.common.progress import bar_off
from placer.envs.action import REJECT, Offer
from placer.envs.action import action_of as teacher_action
from placer.envs.config import EnvConfig
from placer.envs.env import ClusterPlacementEnv
from placer.envs.resize import ResizeOffer, ShrinkOffer, rebalance_choice
from placer.policies.demonstrations import Demonstrations, Kept, Spool, merge
from placer.policies.teachers import Teachers
from placer.sim.types import Place


def teacher_choice(teacher, offer: Offer | ResizeOffer | ShrinkOffer) -> int:
    """The teacher's action at ``offer``. An arriving job's offer, plain or a :class:`~placer.envs.resize.ShrinkOffer` (its
    view has the devices running jobs give back free): the option giving the devices the teacher places the job on.
    A running job's :class:`~placer.envs.resize.ResizeOffer`: :func:`teacher_resize`."""
    if isinstance(offer, ResizeOffer):
        return teacher_resize(teacher, offer)
    return teacher_action(teacher.decide(offer.job, offer.view), offer.options)


def teacher_resize(teacher, offer: ResizeOffer) -> int:
    """An elastic teacher's action at a running job's resize offer: the option giving the devices its ``rebalance``
    moves the job to, asked on the round's cluster as it stands (the job holding its own devices; earlier offers'
    resizes taken; :func:`teacher_action` where the table lacks those exact devices). Keep when it leaves the job where
    it is, or when the teacher is not elastic (it grows none)."""
    return teacher_action(rebalance_choice(teacher, offer), offer.options)  # a kept job: Reject, action 0 (KEEP)


def teacher_targets(teacher, action: int, table, num_actions: int, temperature: float) -> np.ndarray:
    """(num_actions,) the soft target of one decision: softmax over the planner's candidates of minus their
    estimated blocked jobs / ``temperature``; one-hot on ``action`` when it did not plan or ``temperature`` is 0."""
    row = np.zeros(num_actions, dtype=np.float32)
    scored = []
    for decision, cost in teacher.estimates():
        candidate = teacher_action(decision, table)
        if candidate != REJECT or not isinstance(decision, Place):  # a placement the env's table lacks is dropped
            scored.append((candidate, cost))
    if temperature <= 0 or len(scored) < 2:
        row[action] = 1.0
        return row
    costs = np.array([cost for _, cost in scored])
    weights = np.exp(-(costs - costs.min()) / temperature)
    np.add.at(row, [a for a, _ in scored], (weights / weights.sum()).astype(np.float32))
    return row


def collect(
    config: EnvConfig,
    teacher: str,
    steps: int,
    seed: int,
    *,
    progress: bool = False,
    workers: int = 1,
    gamma: float = 0.99,
    learner=None,
    temperature: float = 0.0,
    members: Mapping[str, str] | None = None,
    per_episode: int = 0,
    policy_file: str | None = None,
    ticks: Queue | None = None,
    spool: Path | None = None,
    ray: str | None = None,
) -> Demonstrations:
    """Record at least ``steps`` (>= 1) decisions of the heuristic ``teacher`` that had a choice (a progress bar when
    ``progress``, over every worker's decisions; ``ticks``: a queue told each episode's count, for a parent's bar).

    With ``learner`` (a policy network), the learner's greedy actions drive the episodes while the
    teacher's are recorded (DAgger: the states the learner reaches, labelled by the teacher, so
    its own mistakes are in the data). Episodes are played to their end, so that every
    return (discount ``gamma``) is complete; recording stops at the first episode end with ``steps`` recorded.
    Offers where only reject (or hold) is open are played but not recorded: there is nothing to learn from them.
    ``per_episode`` > 0 records at most that many decisions of an episode, drawn uniformly among its decisions with a
    choice (a reservoir, seeded by ``seed`` and the episode): a busy episode (10^4 decisions) then teaches no more than a
    quiet one (10^2), and ``steps`` spread over many episodes instead of a few. 0 records every decision.
    ``workers`` > 1 records in that many processes, worker ``w`` seeded ``1009 seed + w + 1`` (a slow
    teacher such as ``lookahead`` or ``hindsight`` then takes 1 / workers of the time; the learner is copied to each);
    given ``ray`` (a Ray cluster's address), as that many Ray tasks there instead: the same decisions (no progress bar).
    ``temperature`` (jobs) makes a planner's soft targets (:func:`teacher_targets`); 0 keeps them one-hot.
    ``members``: for the teacher ``best``, the member tuned per regime (:func:`placer.policies.teachers.regime_members`);
    each episode is demonstrated by its regime's member; ``policy_file``: the file a ``learned`` member runs.
    ``spool``: a folder each finished episode is kept in (worker ``w``'s in ``worker-w``), read back by a recording made
    the same way after a stop (:class:`~placer.policies.demonstrations.Spool`): it plays on from there, to the same decisions.
    """
    if workers > 1:
        jobs = (config, teacher, steps, seed, workers, gamma, learner, temperature, members, per_episode, policy_file)
        return _collect_in_processes(*jobs, progress=progress, spool=spool, ray=ray)
    drive = GreedyLearner(learner) if learner is not None else None
    env = ClusterPlacementEnv(config)
    teachers = Teachers(teacher, config.max_degree, members, policy_file, config.all_clusters)
    spooled = Spool(spool) if spool is not None else None
    kept = spooled.kept() if spooled is not None else Kept([])
    parts, count = kept.parts, sum(map(len, kept.parts))  # each episode's decisions, and how many in all
    bar = tqdm(total=steps, initial=count, desc=f"recording {teacher}", unit="decision", disable=bar_off(progress), leave=False)
    if ticks is not None and count:
        ticks.put(count)
    obs, info = env.reset(seed=seed)
    if kept.rng_state is not None and count < steps:  # a stopped recording: on from the episode after its last kept one
        env.np_random.bit_generator.state = kept.rng_state
        obs, info = env.reset()
    for episode in itertools.count(kept.last_episode + 1):
        if count >= steps:
            break
        policy = teachers.for_episode(info)
        policy.reset(np.random.default_rng(seed if episode == 0 else [seed, count]))  # a new episode: job ids start again
        policy.foresee(env.stream)  # a clairvoyant teacher (hindsight) is told the episode's jobs; the learner never sees them
        reservoir = _Reservoir(per_episode, np.random.default_rng([seed, episode, 17]))
        rewards = _play(env, obs, policy, reservoir, drive, temperature)
        if samples := reservoir.samples():
            parts.append(_stacked(samples, _discounted(rewards, gamma)))
            count += len(samples)
            if spooled is not None:
                spooled.keep(episode, parts[-1], env.np_random.bit_generator.state)
        bar.update(len(samples))
        if ticks is not None:
            ticks.put(len(samples))
        if count < steps:
            obs, info = env.reset()
    bar.close()
    return merge(parts)


def _play(env: ClusterPlacementEnv, obs: dict, policy, reservoir: _Reservoir, drive, temperature: float) -> list[float]:
    """Play the episode ``env`` was reset to (``obs``: its first observation); each decision with a choice is offered
    to ``reservoir``, labelled by the teacher ``policy`` (played by ``drive``, the learner, when given). Returns the
    episode's rewards."""
    rewards: list[float] = []
    while True:
        offer, mask = env.offer, env.action_masks()
        action = teacher_choice(policy, offer)
        if mask.sum() > 1:  # a choice: a lesson (with only reject or hold open, there is none)
            target = teacher_targets(policy, action, offer.options, len(mask), temperature)
            reservoir.add(_Sample(obs, mask, action, target, len(rewards)))
        obs, reward, terminated, truncated, _ = env.step(action if drive is None else drive(obs, mask))
        rewards.append(reward)
        if terminated or truncated:
            return rewards


def _stacked(samples: list[_Sample], episode_returns: np.ndarray) -> Demonstrations:
    """One episode's kept samples as demonstrations, each with its discounted return (``episode_returns``: (T,))."""
    return Demonstrations(
        {k: np.stack([s.obs[k] for s in samples]) for k in samples[0].obs},
        np.stack([s.mask for s in samples]),
        np.asarray([s.action for s in samples], dtype=np.int64),
        np.asarray([float(episode_returns[s.step]) for s in samples], dtype=np.float32),
        np.stack([s.target for s in samples]),
    )


@dataclass(frozen=True)
class _Sample:
    """One recorded decision: the observation, mask, teacher's action and targets, and its step in the episode."""

    obs: dict[str, np.ndarray]
    mask: np.ndarray
    action: int
    target: np.ndarray
    step: int


class _Reservoir:
    """Up to ``size`` of the samples offered, uniformly (Algorithm R), in episode order; every one when ``size`` is 0."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size, self.rng, self.seen = size, rng, 0
        self.kept: list[_Sample] = []

    def add(self, sample: _Sample) -> None:
        self.seen += 1
        if not self.size or len(self.kept) < self.size:
            self.kept.append(sample)
            return
        slot = int(self.rng.integers(self.seen))
        if slot < self.size:
            self.kept[slot] = sample

    def samples(self) -> list[_Sample]:
        return sorted(self.kept, key=lambda s: s.step)


class GreedyLearner:
    """The policy network's greedy action on an env observation, each graph encoded once (by id)."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.encodings: dict[int, torch.Tensor] = {}

    def __call__(self, obs: dict[str, np.ndarray], mask: np.ndarray) -> int:
        from placer.policies.loading import greedy_action

        graph = int(obs["graph"][0])
        if graph not in self.encodings:
            with torch.inference_mode():
                self.encodings[graph] = self.policy.pi_features_extractor.encode_graphs(torch.tensor([graph]))
        return greedy_action(self.policy, obs, mask, self.encodings[graph])


def _discounted(rewards: list[float], gamma: float) -> np.ndarray:
    """(T,) the discounted return from each step of one finished episode."""
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def _collect_one(args: tuple) -> Demonstrations:
    config, teacher, steps, seed, gamma, learner, temperature, members, per_episode, policy_file, ticks, spool = args
    torch.set_num_threads(1)
    return collect(
        config,
        teacher,
        steps,
        seed,
        gamma=gamma,
        learner=learner,
        temperature=temperature,
        members=members,
        per_episode=per_episode,
        policy_file=policy_file,
        ticks=ticks,
        spool=spool,
    )


def _collect_in_processes(
    config: EnvConfig,
    teacher: str,
    steps: int,
    seed: int,
    workers: int,
    gamma: float,
    learner,
    temperature: float,
    members: Mapping[str, str] | None,
    per_episode: int,
    policy_file: str | None,
    *,
    progress: bool,
    spool: Path | None = None,
    ray: str | None = None,
) -> Demonstrations:
    shares = [steps // workers + (w < steps % workers) for w in range(workers)]
    spools = [spool / f"worker-{w}" if spool is not None else None for w in range(workers)]
    calls = [
        (config, teacher, share, 1009 * seed + w + 1, gamma, learner, temperature, members, per_episode, policy_file)
        for w, share in enumerate(shares)
    ]
    if ray is not None:  # no queue shared with the tasks for a bar: each worker's share comes back whole
        with results_in_order(_collect_one, [((*call, None, spools[w]),) for w, call in enumerate(calls) if shares[w]], ray=ray) as done:
            return merge(list(done))
    manager = multiprocessing.get_context("spawn").Manager() if progress else nullcontext()  # a Manager serves the bar's queue
    with spawn_pool(workers) as pool, manager as served:
        ticks = served.Queue() if served is not None else None
        futures = [pool.submit(_collect_one, (*call, ticks, spools[w])) for w, call in enumerate(calls) if shares[w]]
        if ticks is not None:
            _show_ticks(ticks, futures, steps, f"recording {teacher}")
        return merge([future.result() for future in futures])


def _show_ticks(ticks: Queue, futures: list[Future], total: int, desc: str) -> None:
    """A progress bar of the decisions the workers report on ``ticks`` until every future is done (or one failed)."""
    with tqdm(total=total, desc=desc, unit="decision", leave=False, disable=bar_off(True)) as bar:
        while not all(f.done() for f in futures) and not any(f.done() and f.exception() for f in futures):
            try:
                bar.update(ticks.get(timeout=0.5))
            except queue.Empty:
                pass


def clone(
    policy,
    data: Demonstrations,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    soft: bool = False,
    progress: bool = False,
) -> float:
    """Fit the policy's masked logits to the demonstrations' actions (``soft``: their soft targets), then its value head
    to their returns (a progress bar over the actor's minibatches when ``progress``).

    First the whole network by cross-entropy on the actions; then, with everything the actor uses
    frozen, only the critic's own layers by mean squared error on the returns (so the critic's
    large early errors cannot pull the cloned actor away). Returns the final action accuracy.
    """
    rng = np.random.default_rng(seed)
    policy.set_training_mode(True)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    batches = epochs * max(1, len(data) // batch_size)
    bar = tqdm(
        _minibatches(rng, len(data), epochs, batch_size),
        total=batches,
        desc="cloning",
        unit="batch",
        disable=bar_off(progress),
        leave=False,
    )
    for index in bar:
        logits = _masked_logits(policy, data.batch(index), torch.from_numpy(data.masks[index]))
        if soft:
            loss = -(torch.from_numpy(data.targets[index]) * F.log_softmax(logits, dim=1)).sum(1).mean()
        else:
            loss = F.cross_entropy(logits, torch.from_numpy(data.actions[index]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    critic = [*policy.mlp_extractor.critic.parameters(), *policy.value_net.parameters()]
    optimizer = torch.optim.Adam(critic, lr=learning_rate)
    for index in _minibatches(rng, len(data), epochs, batch_size):
        with torch.no_grad():
            context, options = policy.mlp_extractor._embed(policy.extract_features(data.batch(index), policy.pi_features_extractor))
        values = policy.value_net(policy.mlp_extractor.critic(torch.cat([context, options.mean(1)], dim=1))).squeeze(-1)
        loss = F.mse_loss(values, torch.from_numpy(data.returns[index]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    policy.set_training_mode(False)
    return agreement(policy, data, limit=2048)


def agreement(policy, data: Demonstrations, limit: int | None = None) -> float:
    """The fraction of the (first ``limit``) demonstrations where the policy's greedy action is the teacher's."""
    index = np.arange(min(len(data), limit or len(data)))
    with torch.no_grad():
        predicted = np.concatenate(
            [
                _masked_logits(policy, data.batch(part), torch.from_numpy(data.masks[part])).argmax(1).numpy()
                for part in np.array_split(index, max(1, len(index) // 1024))
            ]
        )
    return float((predicted == data.actions[index]).mean())


def _minibatches(rng: np.random.Generator, size: int, epochs: int, batch_size: int):
    for _ in range(epochs):
        yield from np.array_split(rng.permutation(size), max(1, size // batch_size))


def _masked_logits(policy, obs: dict[str, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    features = policy.extract_features(obs, policy.pi_features_extractor)
    logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
    return logits.masked_fill(~mask, -1e9)
