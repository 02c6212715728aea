import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.action import REJECT
from envs.advice import advice_arrays
from placer.baselines.policy import run_policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.common.errors import PlacerError
from placer.sim.options import Option
from placer.sim.types import Place, Reject

SMALL = {"graphs": ("alexnet", "gnmt", "resnet18"), "episode_jobs": 40, "queue": "edf-bf"}


def _option(degree, rule, devices):
    return Option(degree, rule, devices, 1.0 if devices else None, 10.0)


def test_advice_marks_every_option_on_the_advised_devices_and_the_holds():
    table = [
        _option(1, "first_fit", (0,)),
        _option(1, "best_fit", (4,)),
        _option(2, "first_fit", (0, 1)),
        _option(2, "best_fit", (1, 0)),  # the same devices in another order: the same placement
        _option(3, "first_fit", None),
    ]
    columns, holds = advice_arrays([Place((0, 1)), Reject(), Place((4,)), Place((7,))], table)
    assert columns.tolist() == [[0, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    assert holds.tolist() == [0, 1, 0, 0]  # a placement on devices no option uses is neither


def test_an_env_with_advisers_passes_the_checker_and_widens_its_options():
    env = envs.ClusterPlacementEnv(**SMALL, advisers=("lean", "para_min+best_fit"))
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs["options"].shape[1] == 13 + 2 and obs["advice"].shape == (2,)
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("name", ["lean:admit=0.8+best_fit", "para_min", "lean+spread"])
def test_following_an_adviser_reproduces_its_own_run(name):
    """Taking the adviser's marked option (or holding where it holds) at every step is that heuristic's run, job for job:
    the advice is what the heuristic would do in the env's own state (of heuristics that place only where the deadline is met)."""
    env = envs.ClusterPlacementEnv(**SMALL, load=1.5, advisers=(name,))
    obs, _ = env.reset(seed=2)
    done = False
    while not done:
        marked = np.flatnonzero((obs["options"][:, 13] > 0) & env.action_masks()[1:])
        action = REJECT if obs["advice"][0] else 1 + int(marked[0])
        obs, _, done, _, _ = env.step(action)
    alone = make_policy(name, PolicyContext(env.cost.cluster, env.config.max_degree))
    assert env.sim is not None
    run = run_policy(alone, env.cost, env.stream, env.sim.queue, np.random.default_rng(0))
    outcomes = lambda records: sorted((r.job_id, r.outcome, r.devices) for r in records)  # noqa: E731
    assert outcomes(env.sim.records) == outcomes(run.records)


def test_an_adviser_that_must_be_tuned_is_one_line():
    with pytest.raises(PlacerError, match="adviser 'best': give a heuristic whose name alone decides"):
        envs.ClusterPlacementEnv(**SMALL, advisers=("best",))
    with pytest.raises(PlacerError, match="unknown"):
        envs.ClusterPlacementEnv(**SMALL, advisers=("nonsense:7",))
