import numpy as np
import pytest

import envs
from envs.config import EnvConfig
from placer.heuristics import make_heuristic
from policies.imitation import clone, collect, teacher_action
from policies.model import build_policy

CONFIG = EnvConfig(clusters=("dgx8x8",), graphs=("alexnet", "gnmt"), episode_jobs=40, max_nodes=64, max_edges=128)


def test_teacher_actions_are_feasible_and_reproduce_the_teachers_devices():
    env = envs.ClusterPlacementEnv(CONFIG)
    teacher = make_heuristic("lean")
    env.reset(seed=3)
    for _ in range(40):
        decision = teacher.decide(env.job, env.sim.view())
        action = teacher_action(decision, env._table)
        assert env.action_masks()[action]
        if action:
            assert env._table[action - 1].devices == decision.devices
        _, _, done, _, info = env.step(action)
        assert info["record"].devices == getattr(decision, "devices", ())
        if done:
            break


@pytest.mark.slow
def test_cloning_learns_the_teacher():
    data = collect(CONFIG, "para_min+best_fit", 300, seed=0)  # the shipped warm start's teacher
    assert len(data) == 300 and data.masks[np.arange(300), data.actions].all()
    assert len(data.graphs) == 2  # graph arrays stored once per graph
    policy = build_policy(CONFIG, 16, 1, [32])
    accuracy = clone(policy, data, epochs=15, batch_size=64, learning_rate=3e-3, seed=0)
    assert accuracy > 0.9


def test_recording_in_processes_adds_up_the_workers_shares():
    from policies.imitation import collect

    data = collect(CONFIG, "lean", 90, seed=3, workers=2)
    one = collect(CONFIG, "lean", 45, seed=1009 * 3 + 1)
    assert len(data) == 90 and (data.actions[:45] == one.actions).all()  # worker 0's share, seeded as documented
    assert set(data.graph_of) <= set(data.graphs)
