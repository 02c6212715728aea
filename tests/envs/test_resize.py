"""A learned policy that resizes running jobs (``EnvConfig(elastic=True)``, :mod:`placer.envs.resize`)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.policy import run_policy
from placer.envs.action import any_option
from placer.envs.env import ClusterPlacementEnv
from placer.envs.resize import KEEP, RESIZE_FEATURES, ResizeOffer, ResizeRound, ShrinkOffer
from placer.envs.reward import reward
from placer.sim.elastic import ResizeError, plan_resizes
from placer.sim.simulator import PULL, Simulator
from placer.sim.types import Place, Resize

GRAPHS = ("alexnet", "vgg16", "resnet18", "gnmt")


def _env(**changes) -> ClusterPlacementEnv:
    settings = {"clusters": "dgx8x8", "graphs": GRAPHS, "jobs": 80, "load": 0.7, "reward": "mission", "elastic": True}
    return ClusterPlacementEnv(**(settings | changes))


def _play(env: ClusterPlacementEnv, seed: int, pick) -> tuple[float, int]:
    """One episode, ``pick(env, mask)`` choosing; (its summed reward, resize offers answered)."""
    env.reset(seed=seed)
    total, offers, done = 0.0, 0, False
    while not done:
        mask = env.action_masks()
        offers += isinstance(env.offer, ResizeOffer)
        obs, r, done, _, _ = env.step(pick(env, mask))
        assert env.observation_space.contains(obs)
        total += r
    return total, offers


def _largest(env, mask):
    return int(np.flatnonzero(mask)[-1])


def _grower(seed: int = 0):
    """Random open choices for arriving jobs, the largest open option for a running job: resizes wherever one opens."""
    rng = np.random.default_rng(seed)

    def pick(env, mask):
        return _largest(env, mask) if isinstance(env.offer, ResizeOffer) else int(rng.choice(np.flatnonzero(mask)))

    return pick


def test_the_elastic_env_passes_gymnasiums_and_sb3s_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(_env(jobs=40), skip_render_check=True)
    sb3_check_env(_env(jobs=40))
    assert _env().observation_space["resize"].shape == (RESIZE_FEATURES,)
    assert "resize" not in ClusterPlacementEnv(graphs=GRAPHS).observation_space.spaces  # off: the observation of before


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 1000), queue=st.sampled_from(["none", "edf-bf"]), offers=st.sampled_from([1, 3]))
def test_every_open_resize_is_carried_out_and_the_rewards_add_up_to_the_final_records(seed, queue, offers):
    """Taking the largest open option at every resize offer raises no ResizeError (the mask opens
    only what the simulator accepts), and the episode's rewards sum to the mission reward of the jobs' final records:
    a resize adds the change it makes to the resized job's reward, once."""
    env = _env(queue=queue, resize_offers=offers)
    total, _ = _play(env, seed, _grower(seed))
    assert env.sim is not None
    final = math.fsum(reward("mission", r, env._mean_seq) for r in env.sim.records)
    assert total == pytest.approx(final, abs=1e-6)


def test_resize_offers_come_with_their_features_and_move_jobs_onto_idle_devices():
    env = _env()
    _, offers = _play(env, 0, _grower())
    assert env.sim is not None
    resized = [r for r in env.sim.records if r.resizes]
    assert offers > 10 and resized  # grown jobs: faster, so earlier
    assert all(r.jct_s < r.sequential_jct_s * r.beta for r in resized)
    env.reset(seed=0)
    pick = _grower()
    while not isinstance(env.offer, ResizeOffer):
        obs, *_ = env.step(pick(env, env.action_masks()))
    features = obs["resize"]
    running = env.offer.running
    assert features[0] == 1 and 0 < features[1] < 1 and features[2] == pytest.approx(running.degree / env.config.max_degree)
    assert env.action_masks()[KEEP]  # keeping is always open
    env.step(KEEP)
    assert all(r.resizes == 0 for r in env.sim.records if r.job_id == running.job.job_id)


def _same(job):
    return job.job_id, job.arrival_s, job.iterations, job.graph.key


def test_keeping_every_job_is_the_fixed_run():
    """Answering every resize offer with keep, and every shrink offer with reject, gives the run of the same decisions
    on a fixed simulator (which rejects those jobs without a step)."""
    elastic, fixed = _env(), _env(elastic=False)
    rng = np.random.default_rng(0)
    elastic.reset(seed=5)
    fixed.reset(seed=5)
    done, shrinks = False, 0
    while not done:
        if isinstance(elastic.offer, ResizeOffer | ShrinkOffer):
            shrinks += isinstance(elastic.offer, ShrinkOffer)
            elastic.step(KEEP)
            continue
        assert _same(elastic.offer.job) == _same(fixed.offer.job)
        action = int(rng.choice(np.flatnonzero(fixed.action_masks())))
        assert (elastic.action_masks() == fixed.action_masks()).all()
        elastic.step(action)
        _, _, done, _, _ = fixed.step(action)
    finished = False
    while not finished:  # resize offers before the last jobs, which nothing could place
        assert isinstance(elastic.offer, ResizeOffer | ShrinkOffer)
        shrinks += isinstance(elastic.offer, ShrinkOffer)
        _, _, finished, _, _ = elastic.step(KEEP)
    assert elastic.sim is not None and fixed.sim is not None
    assert [r.jct_s for r in elastic.sim.records] == [r.jct_s for r in fixed.sim.records]
    assert shrinks > 0  # the elastic run was offered jobs the fixed one rejected


def _to_shrink_offer(env: ClusterPlacementEnv, seed: int):
    """Play random open choices from ``reset(seed)`` until a shrink offer (its observation)."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    while not isinstance(env.offer, ShrinkOffer):
        obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        assert not done, "no shrink offer in the episode"
    return obs


def test_a_shrink_offer_admits_a_job_by_taking_devices_back_that_its_running_jobs_can_spare():
    """A job nothing idle admits is offered on the devices running jobs give back shrunk to their floors; placing it
    shrinks exactly the jobs whose devices it takes, each onto a subset of its own, each still in time."""
    env = _env(load=1.2)
    obs = _to_shrink_offer(env, 1)
    offer, sim = env.offer, env.sim
    assert isinstance(offer, ShrinkOffer) and sim is not None
    assert not any_option(offer.job, sim.view(), env.config.max_degree, env.config.rules)  # nothing idle admits it
    assert obs["resize"][:4].tolist() == [0, 0, 0, 0] and obs["resize"][4] == pytest.approx(offer.released / 64)
    assert all(set(floor) < set(own) for own, floor in offer.floors.values())
    action = int(np.flatnonzero(env.action_masks())[1])  # the smallest open degree
    decision = offer.decision(action)
    assert isinstance(decision, Place) and decision.resizes
    taken = set(decision.devices)
    for resize in decision.resizes:
        own, floor = offer.floors[resize.job_id]
        assert resize.devices == floor and taken & (set(own) - set(floor))
    assert taken - set(np.flatnonzero(sim.view().free).tolist())  # it takes devices that are not idle now
    env.step(action)
    records = {r.job_id: r for r in sim.records}
    assert records[offer.job.job_id].outcome.value == "accepted"
    for resize in decision.resizes:
        shrunk = sim.record_of(resize.job_id)
        assert shrunk.resizes >= 1 and shrunk.jct_s is not None and shrunk.jct_s <= shrunk.sequential_jct_s * shrunk.beta + 1e-9


def test_a_rejected_shrink_offer_shrinks_nothing():
    env = _env(load=1.2)
    _to_shrink_offer(env, 1)
    sim = env.sim
    assert sim is not None
    job, before = env.offer.job, list(sim.records)
    env.step(KEEP)
    assert sim.records[: len(before)] == before  # no running job's record changed
    assert next(r for r in sim.records if r.job_id == job.job_id).outcome.value == "blocked"


def test_a_round_opens_exactly_what_plan_resizes_accepts():
    env = _env(load=1.0)
    env.reset(seed=2)
    seen, pick = 0, _grower()
    while seen < 20:
        if isinstance(env.offer, ResizeOffer):
            offer = env.offer
            assert env.sim is not None
            for option in offer.options:
                if option.devices is None or option.jct_s is None:
                    continue
                running = {offer.running.job.job_id: offer.running}
                free = offer.view.free.copy()
                free[list(offer.running.devices)] = False  # the simulator's own mask: the job holds them
                try:
                    plan_resizes(env.cost, free, running, [Resize(offer.running.job.job_id, option.devices)], offer.view.now)
                    accepted = True
                except ResizeError:
                    accepted = False
                assert accepted == option.feasible, option
            seen += 1
        _, _, done, _, _ = env.step(pick(env, env.action_masks()))
        if done:
            env.reset(seed=3 + seen)


def test_at_a_resize_offer_a_fixed_adviser_keeps_the_job_and_an_elastic_one_marks_where_its_rebalance_moves_it():
    from placer.envs.baseline import baseline_policy
    from placer.policies.imitation import teacher_resize

    env = _env(advisers=("lean", "elastic_lean"))
    obs, _ = env.reset(seed=0)
    pick, kept, moved = _grower(), 0, 0
    while kept + moved < 40:
        if isinstance(offer := env.offer, ResizeOffer):
            assert obs["advice"][0] == 1 and not obs["options"][:, -2].any()  # lean grows nothing: it holds
            teacher = baseline_policy("elastic_lean", env.cost.cluster, env.config.max_degree, "teacher")
            label = teacher_resize(teacher, offer)  # what a fresh elastic_lean's rebalance does with the job
            if label == KEEP:
                assert obs["advice"][1] == 1 and not obs["options"][:, -1].any()
                kept += 1
            else:
                marked = np.flatnonzero(obs["options"][:, -1])
                assert obs["advice"][1] == 0 and label - 1 in marked
                assert {frozenset(offer.options[o].devices) for o in marked} == {frozenset(offer.options[label - 1].devices)}
                moved += 1
        obs, _, done, _, _ = env.step(pick(env, env.action_masks()))
        if done:
            obs, _ = env.reset(seed=kept + moved + 1)
    assert moved and kept


def test_an_elastic_policy_widened_from_a_fixed_one_decides_arriving_jobs_as_it_does(tmp_path):
    """``init_policy`` of a fixed policy for an elastic config: zero weights on the ``resize`` features, so every arriving
    job gets the fixed policy's action."""
    import torch

    from placer.policies.config import PolicySection, TrainConfig, TrainSection
    from placer.policies.loading import greedy_action
    from placer.policies.model import build_policy, save_policy_file
    from placer.policies.train import init_weights

    fixed_env = _env(elastic=False, history=True, advisers=("lean",))
    torch.manual_seed(0)
    fixed = build_policy(fixed_env.config, 16, 2, [32], fixed_env.graph_table).eval()
    save_policy_file(tmp_path / "fixed.pt", fixed, fixed_env.config, {"hidden": 16, "rounds": 2, "net_arch": [32]})
    elastic_env = _env(history=True, advisers=("lean",))
    config = TrainConfig(
        env=elastic_env.config,
        policy=PolicySection(hidden=16, rounds=2, net_arch=[32]),
        train=TrainSection(init_policy=str(tmp_path / "fixed.pt")),
    )
    weights = init_weights(config)
    assert weights is not None
    elastic = build_policy(elastic_env.config, 16, 2, [32], elastic_env.graph_table).eval()
    elastic.load_state_dict(weights)
    obs, _ = elastic_env.reset(seed=1)
    compared, done = 0, False
    while not done and compared < 40:
        mask = elastic_env.action_masks()
        action = greedy_action(elastic, obs, mask)
        if not isinstance(elastic_env.offer, ResizeOffer):
            plain = {k: v for k, v in obs.items() if k != "resize"}
            assert action == greedy_action(fixed, plain, mask)
            compared += 1
        obs, _, done, _, _ = elastic_env.step(action)
    assert compared >= 20


def test_no_offer_while_a_job_waits():
    """A job waiting in the queue gets the idle devices first: the same rebalance point with one waiting offers nothing."""
    from dataclasses import replace

    env = _env(queue="edf-bf")
    env.reset(seed=0)
    pick = _grower()
    while not isinstance(env.offer, ResizeOffer):
        env.step(pick(env, env.action_masks()))
    assert env.sim is not None
    point = env.sim.view()  # the rebalance point the offer came from (its round not yet carried out)
    rules = env.config.rules
    assert ResizeRound(point, 16, rules, 4).next_offer() is not None
    assert ResizeRound(replace(point, waiting=(env.offer.job,)), 16, rules, 4).next_offer() is None


def test_a_learned_policy_resizes_in_a_run_as_in_the_env(tmp_path):
    """An elastic policy file loads as an ElasticLearnedPolicy, whose run (placer evaluate's) is the env's greedy episode,
    resizes included (an elastic adviser's decisions observed at both kinds of offer)."""
    import torch

    from placer.policies.loading import ElasticLearnedPolicy, LearnedPolicy, greedy_action
    from placer.policies.model import build_policy, save_policy_file

    torch.manual_seed(2)  # an untrained network that admits jobs, grows some and shrinks some (seeds 1, 3, 5 reject every job)
    env = _env(jobs=60, resize_offers=2, advisers=("elastic_lean",))
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    policy.eval()
    save_policy_file(tmp_path / "elastic.pt", policy, env.config, {"hidden": 16, "rounds": 2, "net_arch": [32]})
    learned = LearnedPolicy.from_file(tmp_path / "elastic.pt")
    assert isinstance(learned, ElasticLearnedPolicy) and learned.elastic
    obs, _ = env.reset(seed=4)
    done, offers, shrinks = False, 0, 0
    while not done:
        offers += isinstance(env.offer, ResizeOffer)
        action = greedy_action(policy, obs, env.action_masks())
        shrinks += isinstance(env.offer, ShrinkOffer) and action > 0
        obs, _, done, _, _ = env.step(action)
    assert env.sim is not None
    run = run_policy(learned, env.cost, env.stream, env.sim.queue, np.random.default_rng(0))
    assert offers > 0 and shrinks > 0 and any(r.resizes for r in env.sim.records)  # grown and shrunk
    from placer.baselines.registry import PolicyContext
    from placer.baselines.specs import PolicySpec
    from placer.common.errors import PolicyError
    from placer.policies.loading import make_learned_policy

    with pytest.raises(PolicyError, match="not for a policy trained elastic"):  # a gate would drop its resizes silently
        make_learned_policy(PolicySpec.parse(f"learned:{tmp_path / 'elastic.pt'}:below=1.1"), PolicyContext(env.cost.cluster))
    assert [(r.outcome, r.devices, r.resizes, r.jct_s) for r in run.records] == [
        (r.outcome, r.devices, r.resizes, r.jct_s) for r in env.sim.records
    ]


def test_a_pull_simulator_is_elastic():
    env = _env()
    env.reset(seed=0)
    assert env.sim is not None and env.sim.elastic
    assert Simulator(env.cost, env.stream, rebalance=PULL).view().elastic


def test_a_closed_action_keeps_the_running_job():
    env = _env()
    env.reset(seed=0)
    pick = _grower()
    while not isinstance(env.offer, ResizeOffer):
        env.step(pick(env, env.action_masks()))
    closed = np.flatnonzero(~env.action_masks())
    assert len(closed) and env.offer.resize(int(closed[0])) is None and env.offer.resize(10_000) is None


def test_action_0_is_scored_by_the_keep_head_at_a_resize_offer_and_by_the_reject_head_elsewhere():
    """An elastic network scores keeping a running job with a head of its own (placer.policies.scorer): moving the keep head's
    bias moves action 0's logit at resize offers only, and the numpy actor decides as torch does at both kinds of offer."""
    import torch

    from placer.policies.inference import NumpyPolicy
    from placer.policies.loading import greedy_action
    from placer.policies.model import build_policy

    env = _env(jobs=60, resize_offers=2)
    torch.manual_seed(0)
    policy = build_policy(env.config, 16, 2, [32], env.graph_table).eval()
    obs, _ = env.reset(seed=0)
    pick, seen = _grower(), {True: [], False: []}
    while min(len(v) for v in seen.values()) < 3:
        mask = env.action_masks()
        if mask.sum() > 1:
            seen[isinstance(env.offer, ResizeOffer)].append((obs, mask))
        obs, _, done, _, _ = env.step(pick(env, mask))
        assert not done

    def logits(o):
        with torch.no_grad():
            return policy.mlp_extractor.forward_actor(policy.extract_features(policy.obs_to_tensor(o)[0]))[0].numpy()

    before = {flag: [logits(o) for o, _ in offers] for flag, offers in seen.items()}
    with torch.no_grad():
        policy.mlp_extractor.keep_score.bias += 30.0
    for flag, offers in seen.items():
        for (o, mask), old in zip(offers, before[flag], strict=True):
            shift = logits(o) - old
            assert shift[0] == pytest.approx(30.0 if flag else 0.0, abs=1e-4) and np.abs(shift[1:]).max() < 1e-5
            numpy_policy = NumpyPolicy.from_module(policy, env.config)
            with torch.no_grad():
                graph = policy.features_extractor.encode_graphs(torch.as_tensor(o["graph"]))[0].numpy()
            action = greedy_action(policy, o, mask)
            assert numpy_policy.actor.act(graph, o, mask) == action
            assert action == KEEP or not flag  # a keep head this far ahead keeps every offered running job
