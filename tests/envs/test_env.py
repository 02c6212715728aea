import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from placer import envs
from placer.envs.action import REJECT, decision
from placer.envs.observation import GraphTooLargeError
from placer.envs.reward import reward
from placer.sim.types import BlockReason, Outcome

SMALL = {"graphs": ("alexnet", "gnmt", "resnet18"), "episode_jobs": 40}


def test_passes_the_gymnasium_and_sb3_checkers():
    check_env(envs.ClusterPlacementEnv(**SMALL), skip_render_check=True)
    sb3_check_env(envs.ClusterPlacementEnv(**SMALL))


def test_registered_id_builds_the_env():
    env = gym.make(envs.ENV_ID, **SMALL)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


def _rollout(env, seed, pick):
    obs, _ = env.reset(seed=seed)
    rng, actions, rewards, done = np.random.default_rng(seed), [], [], False
    while not done:
        mask = env.action_masks()
        action = pick(mask, rng)
        obs, r, done, _, _ = env.step(action)
        actions.append(action)
        rewards.append(r)
    return actions, rewards


def _random_unmasked(mask, rng):
    return int(rng.choice(np.flatnonzero(mask)))


def test_same_seed_same_rollout():
    a = _rollout(envs.ClusterPlacementEnv(**SMALL), 5, _random_unmasked)
    b = _rollout(envs.ClusterPlacementEnv(**SMALL), 5, _random_unmasked)
    assert a == b


@pytest.mark.parametrize("cluster", ["pacml", "dgx8x8", "mixed"])
def test_mask_is_exactly_the_feasible_set(cluster):
    env = envs.ClusterPlacementEnv(**SMALL, clusters=(cluster,), beta_dists=("B",), load=2.0)
    env.reset(seed=1)
    checked = 0
    for _ in range(40):
        mask = env.action_masks()
        assert mask[REJECT]
        for action in range(1, env.action_space.n):
            reason, _ = env.sim.check(env.offer.job, decision(action, env.offer.options))
            assert mask[action] == (reason is None), (action, reason)
            checked += 1
        _, _, done, _, info = env.step(int(np.flatnonzero(mask)[-1]))
        if mask.sum() > 1:
            assert info["record"].outcome is Outcome.ACCEPTED  # an unmasked action is never blocked
        if done:
            break
    assert checked > 0


def test_reject_blocks_with_reason_rejected():
    env = envs.ClusterPlacementEnv(**SMALL)
    env.reset(seed=0)
    _, r, _, _, info = env.step(REJECT)
    assert (r, info["record"].reason) == (-1.0, BlockReason.REJECTED)


def test_work_reward_scales_with_the_job():
    env = envs.ClusterPlacementEnv(**SMALL, reward="work")
    env.reset(seed=0)
    job = env.job
    _, r, _, _, info = env.step(REJECT)
    assert r == pytest.approx(-job.sequential_jct_s / env._mean_seq)
    assert reward("acceptance", info["record"], 1.0) == -1.0


def test_graph_over_the_padding_limit_is_an_error():
    with pytest.raises(GraphTooLargeError, match="has 1251 forward ops"):
        envs.ClusterPlacementEnv(graphs=("nasnetalarge",))


def test_bad_reward_is_refused():
    from placer.common.errors import PlacerError

    with pytest.raises(PlacerError, match="unknown reward"):
        envs.ClusterPlacementEnv(reward="money")


def test_each_episode_draws_one_of_the_clusters():
    env = envs.ClusterPlacementEnv(**SMALL, clusters=("pacml", "dgx8x8"))
    seen = {env.reset(seed=seed)[1]["cluster"] for seed in range(12)}
    assert seen == {"pacml", "dgx8x8"}
    obs, info = env.reset(seed=0)
    servers = env.cost.cluster.num_servers  # one group per server: 32 on pacml, 8 on dgx8x8
    assert obs["group_mask"].sum() == servers and env.observation_space.contains(obs)


def test_the_readme_snippet_makes_an_env_with_one_cluster_name():
    import gymnasium

    env = gymnasium.make("placer/ClusterPlacement-v0", clusters="dgx8x8", beta_dists=("A", "D"))
    _, info = env.reset(seed=0)
    assert info["cluster"] == "dgx8x8"


QUEUED = {**SMALL, "queue": "edf-bf:8", "size": "loguniform:0.1:10", "clusters": "dgx8x8"}


def test_queue_env_passes_the_checkers():
    check_env(envs.ClusterPlacementEnv(**QUEUED), skip_render_check=True)
    sb3_check_env(envs.ClusterPlacementEnv(**QUEUED))


def test_queue_env_rewards_every_job_once_and_holding_is_not_blocking():
    env = envs.ClusterPlacementEnv(**QUEUED)
    obs, info = env.reset(seed=4)
    assert info["queue"] == "edf-bf:8" and obs["job"][6] == 1.0  # the queue flag
    total, settled, held, done, offers = 0.0, [], 0, False, 0
    while not done:
        mask = env.action_masks()
        offers += 1
        action = REJECT if offers % 3 == 0 else int(np.flatnonzero(mask)[-1])  # hold every third offer, else the largest choice
        obs, r, done, _, info = env.step(action)
        held += info["record"] is None
        total += r
        settled += info["settled"]
    assert held > 0  # held jobs stay in the queue: no record yet
    assert sorted(r.job_id for r in settled) == list(range(SMALL["episode_jobs"]))
    accepted = sum(r.outcome is Outcome.ACCEPTED for r in settled)
    assert total == accepted - (len(settled) - accepted)
    reasons = {r.reason for r in settled if r.outcome is Outcome.BLOCKED}
    assert reasons <= {BlockReason.EXPIRED, BlockReason.QUEUE_FULL, BlockReason.DEADLINE}


def test_each_episode_draws_a_queue_and_a_size():
    env = envs.ClusterPlacementEnv(**{**SMALL, "queue": ("none", "edf-bf"), "size": ("const", "loguniform:0.1:10")})
    seen = {tuple(env.reset(seed=seed)[1][k] for k in ("queue", "size")) for seed in range(16)}
    assert seen == {(q, z) for q in ("none", "edf-bf:32") for z in ("const", "loguniform:0.1:10")}


def test_server_groups_summarise_any_cluster_size():
    from placer.envs.observation import server_groups

    assert server_groups(8, 64).tolist() == list(range(8))
    groups = server_groups(1024, 64)  # 8,192 devices on 1,024 servers: 16 servers per group
    assert groups.max() == 63 and np.bincount(groups).tolist() == [16] * 64 and (np.diff(groups) >= 0).all()


def test_history_env_passes_the_checkers_and_sees_a_sweep():
    config = {**QUEUED, "structure": ("sweeps:share=0.9:size=6", "daily+recurring"), "history": True}
    check_env(envs.ClusterPlacementEnv(**config), skip_render_check=True)
    sb3_check_env(envs.ClusterPlacementEnv(**config))
    env = envs.ClusterPlacementEnv(**{**config, "structure": "sweeps:share=0.9:size=6"})
    obs, info = env.reset(seed=2)
    assert info["structure"] == "sweeps:share=0.9:size=6" and obs["history"].shape == (8,)
    copies, done = [], False
    while not done:
        copies.append(obs["history"][6])  # copies of this job among the last 32 arrivals / 32
        obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[-1]))
    assert max(copies) >= 3 / 32  # a sweep's later copies see the earlier ones
    assert "history" not in envs.ClusterPlacementEnv(**QUEUED).reset(seed=0)[0]


def test_each_episode_draws_one_of_the_loads_and_the_meter_reads_it():
    config = {**QUEUED, "loads": (0.3, 1.5), "meter": True, "beta_dists": ("C",)}
    check_env(envs.ClusterPlacementEnv(**config), skip_render_check=True)
    env = envs.ClusterPlacementEnv(**config)
    readings: dict[float, list[float]] = {0.3: [], 1.5: []}
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            reading = obs["meter"]
            obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[-1]))
        readings[info["load"]].append(float(reading[1]))  # log2(load over 96 arrivals) / 2 at the episode's last offer
    assert all(readings.values())  # both loads drawn
    assert max(readings[0.3]) < min(readings[1.5])  # the meter tells them apart
    with pytest.raises(ValueError):
        envs.ClusterPlacementEnv(**{**QUEUED, "loads": (0.0,)})


SETTINGS = {**SMALL, "clusters": "dgx8x8", "queue": "edf-bf", "loads": (0.5, 1.3), "beta_dists": ("C",)}
LOSS_SETTING = {"clusters": "pacml", "queue": "none", "loads": (0.9,), "graphs": ("gnmt",)}


def test_each_episode_draws_a_setting_and_only_that_settings_regimes():
    from placer.envs.env import regimes, variant_of
    from placer.envs.regime import Regime

    env = envs.ClusterPlacementEnv(**SETTINGS, settings=({}, LOSS_SETTING))
    assert env.config.all_clusters == ("dgx8x8", "pacml")
    seen = set()
    for seed in range(24):
        info = env.reset(seed=seed)[1]
        seen.add(tuple(info[k] for k in ("cluster", "queue", "load")))
        assert info["cluster"] == "dgx8x8" or {job.graph.name for job in env.stream} == {"gnmt"}  # the setting's graphs
    assert seen == {("dgx8x8", "edf-bf:32", 0.5), ("dgx8x8", "edf-bf:32", 1.3), ("pacml", "none", 0.9)}  # never pacml queued
    rows = regimes(env.config)
    assert [(r.cluster, r.load) for r in rows] == [("dgx8x8", 0.5), ("dgx8x8", 1.3), ("pacml", 0.9)]
    assert variant_of(env.config, rows[2]).clusters == ("pacml",) and variant_of(env.config, rows[0]).workload.queue == ("edf-bf",)
    assert rows[2].key == "pacml|0.9|C|none|const|iid" and Regime.from_info(rows[2].as_info()) == rows[2]


def test_without_settings_an_episode_draws_what_it_drew_before_settings_existed():
    plain, one = envs.ClusterPlacementEnv(**SETTINGS), envs.ClusterPlacementEnv(**SETTINGS, settings=({},))

    def jobs(env):
        return [(j.arrival_s, j.graph.name, j.beta, j.iterations) for j in env.stream]

    for seed in range(4):
        (_, a), (_, b) = plain.reset(seed=seed), one.reset(seed=seed)
        assert a == b and jobs(plain) == jobs(one)  # one setting draws no setting: the same streams


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"max_degree": 4}, "max_degree cannot vary by setting"),
        ({"loads": (-1.0,)}, "settings: .*loads.0"),
        ("pacml", "not a table"),
        ({"graphs": ("vgg16",)}, "graph 'vgg16' is not one of"),
    ],
)
def test_a_bad_setting_is_one_line(setting, message):
    from placer.common.errors import PlacerError

    with pytest.raises(PlacerError, match=message):
        envs.ClusterPlacementEnv(**SETTINGS, settings=(setting,))
    with pytest.raises(PlacerError, match="not a list of tables"):
        envs.ClusterPlacementEnv(**SETTINGS, settings=setting)
