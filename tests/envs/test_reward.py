import dataclasses

import pytest

from placer import envs
from placer.envs.reward import SLOWDOWN_WEIGHT, reward
from placer.sim.types import BlockReason, JobRecord, Outcome

ACCEPTED = JobRecord(
    job_id=0, graph="g", arrival_s=0.0, beta=0.5, iterations=10, sequential_jct_s=100.0, deadline_s=50.0,
    outcome=Outcome.ACCEPTED, reason=None, degree=4, devices=(0, 1, 2, 3), jct_s=30.0, finish_s=40.0,
    wait_s=10.0, fastest_jct_s=20.0, avoidable=True,
)  # fmt: skip
BLOCKED = dataclasses.replace(
    ACCEPTED, outcome=Outcome.BLOCKED, reason=BlockReason.REJECTED, degree=0, devices=(), jct_s=None, finish_s=None
)


def test_mission_reward_counts_avoidable_blocks_first_then_how_close_to_the_fastest_a_job_finished():
    assert reward("mission", ACCEPTED, 1.0) == pytest.approx(1 - SLOWDOWN_WEIGHT * (1 - 20 / 40)) == pytest.approx(0.95)
    assert reward("mission", dataclasses.replace(ACCEPTED, wait_s=0.0, jct_s=20.0), 1.0) == 1.0  # as fast as possible
    assert reward("mission", BLOCKED, 1.0) == -1.0
    unavoidable = dataclasses.replace(BLOCKED, avoidable=False, reason=BlockReason.DEADLINE)
    assert reward("mission", unavoidable, 1.0) == 0.0  # no policy could accept it: no signal
    assert reward("mission", dataclasses.replace(ACCEPTED, fastest_jct_s=None), 1.0) == 1.0
    slowest = dataclasses.replace(ACCEPTED, wait_s=1e9)
    assert 10 * (1 - reward("mission", slowest, 1.0)) < reward("mission", slowest, 1.0) - reward(
        "mission", BLOCKED, 1.0
    )  # ten slow < one block
    assert reward("acceptance", ACCEPTED, 1.0) == 1.0 and reward("work", BLOCKED, 50.0) == -2.0


def test_mission_reward_in_the_env_is_zero_for_jobs_no_policy_could_accept():
    env = envs.ClusterPlacementEnv(
        graphs=("alexnet", "gnmt", "resnet18"), episode_jobs=60, reward="mission", queue="edf-bf", clusters="dgx8x8", beta_dists=("C",)
    )
    env.reset(seed=0)
    rewards, settled, done = [], [], False
    while not done:
        _, r, done, _, info = env.step(env.action_masks().nonzero()[0][-1])  # the widest feasible option
        rewards.append(r)
        settled += info["settled"]
    expected = [reward("mission", record, 1.0) for record in settled]
    assert sum(rewards) == pytest.approx(sum(expected))
    unavoidable = [r for r, record in zip(expected, settled, strict=True) if not record.avoidable]
    assert unavoidable and set(unavoidable) == {0.0}
