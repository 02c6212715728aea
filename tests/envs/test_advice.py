import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from placer import envs
from placer.baselines.policy import run_policy
from placer.baselines.registry import PolicyContext, make_policy
from placer.common.errors import PlacerError
from placer.envs.action import REJECT
from placer.envs.advice import advice_arrays
from placer.sim.options import Option
from placer.sim.types import Place, Reject

SMALL = {"graphs": ("alexnet", "gnmt", "resnet18"), "episode_jobs": 40, "queue": "edf-bf"}


def outcomes(records):
    """A run's records as comparable rows: (job, outcome, devices), by job."""
    return sorted((r.job_id, r.outcome, r.devices) for r in records)


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
    columns, _ = advice_arrays([Place((1, 0)), Place((0, 4)), Place((0, 1))], table)  # two advisers on one degree's devices
    assert columns.tolist() == [[0, 0, 0], [0, 0, 0], [1, 0, 1], [1, 0, 1], [0, 0, 0]]


def test_advice_on_an_option_table_marks_what_its_built_options_would():
    """Of the env's lazy option table only the advised degrees' options are built: the same columns as the whole list."""
    env = envs.ClusterPlacementEnv(**SMALL, clusters=("mixed",), load=1.3, advisers=("lean", "para_min+best_fit", "switch:0.5"))
    env.reset(seed=4)
    marked = 0
    for _ in range(60):
        offer = env.offer
        advice = env.advisers.advise(offer.job, offer.view)
        columns, holds = advice_arrays(advice, offer.options)
        listed = advice_arrays(advice, list(offer.options))
        assert np.array_equal(columns, listed[0]) and np.array_equal(holds, listed[1])
        marked += int(columns.sum())
        if env.step(int(np.flatnonzero(env.action_masks())[-1]))[2]:
            break
    assert marked > 0


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
    assert outcomes(env.sim.records) == outcomes(run.records)


@pytest.mark.parametrize(
    ("advisers", "rules", "message"),
    [
        (("best",), None, "adviser 'best': give a heuristic whose name alone decides"),
        (("lean:admit=best",), None, "adviser 'lean:admit=best': give a heuristic whose name alone decides"),
        (("nonsense:7",), None, "unknown"),
        (("hindsight",), None, "adviser 'hindsight' is told the stream to come"),
        (("lean+spread",), ("first_fit", "best_fit"), "adviser 'lean\\+spread' places by 'spread', not one of the options' rules"),
        (5, None, "advisers: 5 is not a list of heuristics' names"),
        ({"lean": 1}, None, "is not a list of heuristics' names"),
        ([3], None, "advisers: 3 is not a heuristic's name"),
    ],
)
def test_a_bad_adviser_is_one_line(advisers, rules, message):
    with pytest.raises(PlacerError, match=message):
        envs.ClusterPlacementEnv(**SMALL, advisers=advisers, **({"rules": rules} if rules else {}))


def test_an_episode_starts_its_advisers_afresh():
    """An episode observes the advice a fresh env's would: the advisers forget the last run at reset."""

    def episode(env, seed):
        obs, _ = env.reset(seed=seed)
        seen, done = [obs["advice"].tolist() + obs["options"][:, 13].tolist()], False
        while not done:
            obs, _, done, _, _ = env.step(REJECT if obs["advice"][0] else int(np.flatnonzero(env.action_masks())[-1]))
            seen.append(obs["advice"].tolist() + obs["options"][:, 13].tolist())
        return seen

    def fresh():
        return envs.ClusterPlacementEnv(**SMALL, load=1.5, size="loguniform:0.1:10", advisers=("lean:admit=0.5+best_fit",))

    used = fresh()
    episode(used, 9)  # another stream first: the sizes the admission quantile is taken over would carry over
    assert episode(used, 4) == episode(fresh(), 4)
