import dataclasses

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from placer import envs
from placer.baselines.registry import make_heuristic
from placer.envs.config import EnvConfig
from placer.envs.observation import GraphTable
from placer.envs.resize import KEEP, ResizeOffer, ShrinkOffer
from placer.policies.imitation import _masked_logits, agreement, clone, collect, teacher_action, teacher_choice
from placer.policies.model import build_policy
from placer.policies.train import reproducible_torch
from placer.sim.types import Outcome

CONFIG = EnvConfig(clusters=("dgx8x8",), graphs=("alexnet", "gnmt"), episode_jobs=40, max_nodes=64, max_edges=128)
TABLE = GraphTable.from_config(CONFIG)  # the graphs the observations' ids index

@pytest.fixture
def bars_shown(monkeypatch):
    """Progress bars drawn although stderr is captured (no terminal): they are what these tests read."""
    for module in ('placer.policies.imitation',):
        monkeypatch.setattr(f"{module}.bar_off", lambda progress: not progress)



def test_teacher_actions_are_feasible_and_reproduce_the_teachers_devices():
    env = envs.ClusterPlacementEnv(CONFIG)
    teacher = make_heuristic("lean")
    env.reset(seed=3)
    for _ in range(40):
        decision = teacher.decide(env.offer.job, env.offer.view)
        action = teacher_action(decision, env.offer.options)
        assert env.action_masks()[action]
        if action:
            assert env.offer.options[action - 1].devices == decision.devices
        _, _, done, _, info = env.step(action)
        assert info["record"].devices == getattr(decision, "devices", ())
        if done:
            break


@pytest.mark.slow
def test_cloning_learns_the_teacher(capsys, bars_shown):
    data = collect(CONFIG, "para_min+best_fit", 300, seed=0)
    assert len(data) >= 300 and data.masks[np.arange(len(data)), data.actions].all()
    assert set(data.dynamic["graph"][:, 0]) == {0, 1} and "nodes" not in data.dynamic  # graphs by id, no arrays per sample
    torch.manual_seed(0)  # the initial weights: unseeded, the accuracy varied by process (0.895 to 0.914, before graph ids too)
    policy = build_policy(CONFIG, 16, 1, [32], TABLE)
    accuracy = clone(policy, data, epochs=40, batch_size=64, learning_rate=3e-3, seed=0, progress=True)
    assert accuracy > 0.9
    assert "cloning" in capsys.readouterr().err


def test_recording_in_processes_adds_up_the_workers_shares(capsys, bars_shown):
    from placer.policies.imitation import collect

    data = collect(CONFIG, "lean", 90, seed=3, workers=2, progress=True)
    assert "recording lean" in capsys.readouterr().err  # one bar over the workers' decisions
    one = collect(CONFIG, "lean", 45, seed=1009 * 3 + 1)
    two = collect(CONFIG, "lean", 45, seed=1009 * 3 + 2)
    assert len(data) == len(one) + len(two) and (data.actions[: len(one)] == one.actions).all()  # seeded as documented
    assert (data.returns[len(one) :] == two.returns).all()
    assert set(data.dynamic["graph"][:, 0]) <= {0, 1}


def test_discounted_returns_by_hand():
    from placer.policies.imitation import _discounted

    # r = (1, -1, 1), gamma 0.5: G2 = 1, G1 = -1 + 0.5 = -0.5, G0 = 1 - 0.25 = 0.75
    assert _discounted([1.0, -1.0, 1.0], 0.5).tolist() == [0.75, -0.5, 1.0]


def test_undiscounted_return_of_the_first_decision_is_the_episodes_accepted_minus_blocked():
    data = collect(CONFIG, "lean", 1, seed=5, gamma=1.0)  # one decision asked: its whole episode is played
    env = envs.ClusterPlacementEnv(CONFIG)
    env.reset(seed=5)
    teacher, total, done = make_heuristic("lean"), 0.0, False
    teacher.reset(np.random.default_rng(5))
    while not done:
        _, reward, done, _, _ = env.step(teacher_action(teacher.decide(env.offer.job, env.offer.view), env.offer.options))
        total += reward
    records = env.sim.records
    assert total == sum(1 if r.outcome is Outcome.ACCEPTED else -1 for r in records) and len(records) == CONFIG.workload.jobs
    assert len(data) == len(data.returns) > 1 and data.returns[0] == total


def test_dagger_records_the_teachers_labels_on_the_learners_states():
    learner = build_policy(CONFIG, 16, 1, [32], TABLE)  # untrained: it drives the episodes somewhere else than the teacher would
    driven = collect(CONFIG, "lean", 60, seed=2, learner=learner)
    again = collect(CONFIG, "lean", 60, seed=2, learner=learner)
    taught = collect(CONFIG, "lean", 60, seed=2)
    assert driven.masks[np.arange(len(driven)), driven.actions].all()  # labels are feasible teacher choices
    assert (driven.actions == again.actions).all() and (driven.returns == again.returns).all()  # same seed, same data
    assert not np.array_equal(driven.dynamic["cluster"][:40], taught.dynamic["cluster"][:40])  # other states
    assert agreement(learner, driven) < 1.0


def test_a_clairvoyant_teacher_is_told_each_episodes_stream_and_labels_in_processes():
    learner = build_policy(CONFIG, 16, 1, [32], TABLE)
    data = collect(CONFIG, "hindsight:h=4:m=0.5", 60, seed=4, learner=learner, workers=2)  # two episodes per worker at least
    one = collect(CONFIG, "hindsight:h=4:m=0.5", 30, seed=1009 * 4 + 1, learner=learner)
    assert len(data) >= 60 and data.masks[np.arange(len(data)), data.actions].all()
    assert (data.actions[: len(one)] == one.actions).all()  # worker 1's share, as recorded alone


def test_the_env_keeps_the_episodes_stream_for_a_clairvoyant_teacher():
    env = envs.ClusterPlacementEnv(CONFIG)
    env.reset(seed=1)
    assert len(env.stream) == CONFIG.workload.jobs
    assert [s.arrival_s for s in env.stream] == sorted(s.arrival_s for s in env.stream)
    offered = [s.arrival_s for s in env.stream].index(env.job.arrival_s)  # earlier jobs had no feasible option
    assert [r.outcome for r in env.sim.records] == [Outcome.BLOCKED] * offered


def test_soft_targets_by_hand():
    from placer.policies.imitation import teacher_targets
    from placer.sim.types import Place, Reject

    class Option:
        def __init__(self, devices):
            self.devices, self.feasible = devices, True

    table = [Option((0,)), Option((0, 1)), Option((0, 1, 2, 3))]
    from placer.baselines.policy import Policy

    planner = type("Planner", (Policy,), {"estimates": lambda self: self.last_estimates})()  # a planner's declared hook
    # lean's choice (2 devices) estimated to block 3 jobs less its margin 0.5, holding 3, 4 devices 4: temperature 1
    planner.last_estimates = [(Place((0, 1)), 2.5), (Reject(), 3.0), (Place((0, 1, 2, 3)), 4.0)]
    row = teacher_targets(planner, 2, table, 4, temperature=1.0)
    weights = np.exp([-0.0, -0.5, -1.5])
    assert row == pytest.approx(np.array([weights[1], 0.0, weights[0], weights[2]]) / weights.sum())
    assert teacher_targets(planner, 2, table, 4, temperature=0.0).tolist() == [0, 0, 1, 0]
    planner.last_estimates = []  # followed lean without planning: one-hot on the action
    assert teacher_targets(planner, 1, table, 4, temperature=1.0).tolist() == [0, 1, 0, 0]


def test_a_planner_teacher_records_soft_targets_that_favour_its_choice():
    data = collect(CONFIG, "hindsight:h=4:m=0.5", 40, seed=4, temperature=0.5)
    assert data.targets.shape == data.masks.shape and np.allclose(data.targets.sum(1), 1)
    assert (data.targets[~data.masks] == 0).all()  # mass only on open actions
    assert (data.targets.argmax(1) == data.actions).mean() > 0.9  # margin kept: the teacher's choice is the favourite
    assert ((data.targets > 0).sum(1) > 1).any()  # and some offers carry more than one candidate
    policy = build_policy(CONFIG, 16, 1, [32], TABLE)
    clone(policy, data, epochs=2, batch_size=16, learning_rate=1e-3, seed=0, soft=True)  # the soft loss trains


def test_a_reservoir_keeps_each_offered_sample_equally_often_and_in_episode_order():
    from placer.policies.imitation import _Reservoir, _Sample

    kept = np.zeros(4)
    for trial in range(4000):
        reservoir = _Reservoir(2, np.random.default_rng(trial))
        for step in range(4):
            reservoir.add(_Sample({}, np.ones(2, bool), 1, np.zeros(2, np.float32), step))
        steps = [s.step for s in reservoir.samples()]
        assert len(steps) == 2 and steps == sorted(steps)
        kept[steps] += 1
    assert np.all(np.abs(kept / 4000 - 0.5) < 0.03), kept  # each of the 4 kept with probability 2/4
    everything = _Reservoir(0, np.random.default_rng(0))
    for step in range(5):
        everything.add(_Sample({}, np.ones(2, bool), 1, np.zeros(2, np.float32), step))
    assert [s.step for s in everything.samples()] == [0, 1, 2, 3, 4]  # size 0: every one


def test_recording_at_most_k_decisions_an_episode_draws_them_from_that_episodes_decisions():
    full = collect(CONFIG, "lean", 1, seed=6, gamma=1.0)  # the first episode, every decision
    capped = collect(CONFIG, "lean", 1, seed=6, gamma=1.0, per_episode=5)  # the same episode (lean has no randomness), 5 of them
    assert len(full) > 5 and len(capped) == 5
    rows = [np.flatnonzero((full.dynamic["cluster"] == c).all(axis=tuple(range(1, c.ndim + 1)))) for c in capped.dynamic["cluster"]]
    index = [int(r[0]) for r in rows]  # where each sample sits in the full recording
    assert index == sorted(index) and len(set(index)) == 5
    assert (capped.actions == full.actions[index]).all() and (capped.returns == full.returns[index]).all()  # returns of the whole episode
    many = collect(CONFIG, "lean", 12, seed=6, per_episode=3)
    assert len(many) == 12  # four episodes of 40 jobs, three decisions each
    assert len(collect(CONFIG, "lean", 1, seed=6, per_episode=10_000)) == len(full)  # a cap above the episode's decisions: all of them


def _elastic_episode(teacher: str, *, load: float, jobs: int, seed: int):
    """An elastic env of four graphs reset at ``seed`` and the heuristic ``teacher``, reset too."""
    config = CONFIG.with_changes(
        elastic=True, load=load, episode_jobs=jobs, graphs=("alexnet", "vgg16", "resnet18", "gnmt"), max_nodes=512, max_edges=1024
    )
    env = envs.env.ClusterPlacementEnv(config)
    policy = make_heuristic(teacher, max_degree=config.max_degree)
    env.reset(seed=seed)
    policy.reset(np.random.default_rng(0))
    return config, env, policy


def test_on_an_elastic_env_the_teacher_keeps_running_jobs_and_places_on_what_shrinking_gives_back():
    """A resize offer is labelled keep; a shrink offer with the option of the devices the teacher picks on the view with
    the given-back devices free (as it would place the job were they idle)."""
    config, env, teacher = _elastic_episode("lean", load=1.2, jobs=80, seed=1)
    seen: dict[str, int] = {}
    done = False
    while not done:
        offer = env.offer
        action = teacher_choice(teacher, offer)
        kind = type(offer).__name__
        seen[kind] = seen.get(kind, 0) + 1
        if isinstance(offer, ResizeOffer):
            assert action == KEEP
        elif isinstance(offer, ShrinkOffer) and action:
            devices = offer.options[action - 1].devices
            assert devices == teacher.decide(offer.job, offer.view).devices and offer.decision(action).resizes
        _, _, done, _, _ = env.step(action)
    assert seen.get("ResizeOffer") and seen.get("ShrinkOffer")
    data = collect(config, "lean", 40, seed=3)
    kept = data.dynamic["resize"][:, 0] == 1
    assert kept.any() and (data.actions[kept] == KEEP).all()


def test_an_elastic_teacher_labels_a_resize_offer_with_the_devices_its_rebalance_moves_the_job_to():
    """elastic_lean grows running jobs into idle devices: at a resize offer its label is the option of the devices its
    rebalance gives that job on the round's cluster (the job holding its own), one of that degree where the table lacks
    them, keep where it leaves the job."""
    config, env, teacher = _elastic_episode("elastic_lean", load=0.6, jobs=60, seed=2)
    labels = {"grow": 0, "near": 0, "keep": 0}
    done = False
    while not done:
        offer = env.offer
        action = teacher_choice(teacher, offer)
        if isinstance(offer, ResizeOffer):
            free = offer.view.free.copy()
            free[list(offer.running.devices)] = False
            moved = {r.job_id: r.devices for r in teacher.rebalance(dataclasses.replace(offer.view, free=free))}
            if action == KEEP:
                assert offer.job.job_id not in moved
                labels["keep"] += 1
            else:
                wanted, got = moved[offer.job.job_id], offer.options[action - 1].devices
                assert len(got) == len(wanted) > offer.running.degree and env.action_masks()[action]
                exact = [o.devices for o in offer.options if o.feasible].count(wanted)
                assert got == wanted if exact else not exact  # the teacher's own devices where the table has them
                labels["grow" if exact else "near"] += 1
        _, _, done, _, _ = env.step(action)
    assert labels["grow"] and labels["keep"]
    data = collect(config, "elastic_lean", 30, seed=3)
    resized = data.dynamic["resize"][:, 0] == 1
    assert resized.any() and (data.actions[resized] != KEEP).any()  # recorded: grown, not only kept


def test_a_placement_the_table_lacks_is_labelled_with_the_nearest_option_of_its_degree_never_with_reject():
    """Exact devices where the table has them; else the feasible option of the same degree sharing most of them, then
    the soonest to finish, then the first; reject only for a rejection or when no feasible option has that degree."""
    from placer.sim.options import Option
    from placer.sim.types import Place, Reject

    def option(devices, jct, deadline=100.0):
        return Option(len(devices or ()), "first_fit", devices, jct, deadline)

    table = [
        option((0,), 10.0),
        option((0, 1), 50.0),
        option((2, 3), 40.0),  # shares one device with (1, 2) like (0, 1), and finishes sooner
        option((4, 5), 30.0),  # shares none
        option((6, 7), 200.0),  # infeasible: misses its deadline
        option((1, 2, 3, 4), 20.0),
    ]
    assert teacher_action(Place((2, 3)), table) == 3  # exact
    assert teacher_action(Place((1, 2)), table) == 3  # nearest of degree 2: most shared, then sooner
    assert teacher_action(Place((6, 7)), table) == 4  # exact but infeasible: the nearest feasible of its degree
    assert teacher_action(Place((0, 1, 2, 3)), table) == 6
    assert teacher_action(Place((0, 1, 2)), table) == 0  # no option of degree 3
    assert teacher_action(Reject(), table) == 0


def _gradients(data, index: np.ndarray) -> dict[str, torch.Tensor]:
    """The cloning loss's gradient of a fresh seeded network on the demonstrations at ``index``."""
    torch.manual_seed(0)
    policy = build_policy(CONFIG, 16, 1, [32], TABLE)
    logits = _masked_logits(policy, data.batch(index), torch.from_numpy(data.masks[index]))
    F.cross_entropy(logits, torch.from_numpy(data.actions[index])).backward()
    return {name: p.grad.clone() for name, p in policy.named_parameters() if p.grad is not None}


def test_the_same_seed_clones_the_same_weights_on_two_threads():
    """Training's torch (:func:`placer.policies.train.reproducible_torch`) sums a minibatch's gradients in one order: on 2 threads
    torch's own default summed the graph encodings' in another order each run (differences of 5e-10 here, 0.02 in the
    weights after a clone's first epoch). The settings are restored on exit."""
    data = collect(CONFIG, "lean", 200, seed=0)
    index = np.resize(np.arange(len(data)), 4000)  # enough rows that the gradient's sum is split over the threads
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with reproducible_torch(2):
        first, *others = (_gradients(data, index) for _ in range(4))
    assert all(torch.equal(first[name], other[name]) for other in others for name in first)
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before
