import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from placer import envs
from placer.common.errors import PolicyError
from placer.envs.action import decision
from placer.envs.config import EnvConfig
from placer.envs.observation import GRAPH_KEYS, graph_arrays
from placer.policies.extractor import PlacementExtractor
from placer.policies.gnn import GraphEncoder
from placer.policies.model import build_policy, load_policy_file, save_policy_file
from tests.envs.test_advice import outcomes


def _batch(observations):
    return {k: torch.as_tensor(np.stack([o[k] for o in observations])).float() for k in observations[0]}


def _observations(graphs, n=6, **kwargs):
    env = envs.ClusterPlacementEnv(graphs=graphs, episode_jobs=50, **kwargs)
    obs, _ = env.reset(seed=0)
    out = []
    for _ in range(n):
        out.append(obs)
        obs, *_ = env.step(0)
    return env, out


def test_extractor_shapes_on_variable_size_graphs():
    env, observations = _observations(("alexnet", "densenet121", "gnmt"), n=8)
    sizes = {int(env.graph_table.arrays["node_mask"][int(o["graph"][0])].sum()) for o in observations}
    assert len(sizes) > 1  # the batch mixes graph sizes
    extractor = PlacementExtractor(env.observation_space, hidden=16, rounds=2, graphs=env.graph_table)
    features = extractor(_batch(observations))
    assert features.shape == (8, extractor.features_dim)
    assert extractor.features_dim == extractor.context_dim + 48 * 13 and extractor.context_dim == 2 * 16 + 32 + 64 + 5
    one_by_one = torch.cat([extractor(_batch([o])) for o in observations])
    torch.testing.assert_close(features, one_by_one, rtol=1e-5, atol=1e-5)


def test_deduplicated_and_cached_graph_encodings_equal_the_plain_ones():
    env, observations = _observations(("alexnet", "densenet121", "gnmt"), n=12)
    extractor = PlacementExtractor(env.observation_space, hidden=16, rounds=2, graphs=env.graph_table)
    batch = _batch(observations)
    extractor.dedupe_graphs = False
    plain = extractor(batch)
    extractor.dedupe_graphs = True
    torch.testing.assert_close(extractor(batch), plain)
    extractor.rollout_cache = {}
    with torch.no_grad():
        torch.testing.assert_close(extractor(batch), plain)
        assert len(extractor.rollout_cache) == len({int(o["graph"][0]) for o in observations}) > 1  # one per graph
        torch.testing.assert_close(extractor(_batch(observations[::-1])), plain.flip(0))  # served from the cache


def test_graphs_with_equal_array_sums_are_encoded_apart():
    from placer.envs.observation import GraphTable, observation_space
    from tests.placer.toys import equal_sum_paths

    table = GraphTable(equal_sum_paths(), max_nodes=8, max_edges=8)  # the old fingerprint (sums of the arrays) collided
    extractor = PlacementExtractor(observation_space(2, 6, 4), hidden=8, rounds=2, graphs=table)
    with torch.no_grad():
        encoded = extractor.encode_graphs(torch.tensor([0, 1, 0]))
        extractor.rollout_cache = {}
        cached = extractor.encode_graphs(torch.tensor([1, 0]))
    assert not torch.allclose(encoded[0], encoded[1]) and torch.equal(encoded[0], encoded[2])
    assert torch.equal(cached, encoded[[1, 0]]) and set(extractor.rollout_cache) == {0, 1}


def test_graph_encoding_ignores_padding():
    encoder = GraphEncoder(8, 1, hidden=8, rounds=2)
    graph = envs.ClusterPlacementEnv(graphs=("alexnet",)).graphs[0]
    small, big = graph_arrays(graph, 512, 1024), graph_arrays(graph, 900, 2000)
    enc = [encoder(*(torch.as_tensor(o[k]).unsqueeze(0).float() for k in GRAPH_KEYS)) for o in (small, big)]
    torch.testing.assert_close(enc[0], enc[1])


def test_policy_file_round_trip(tmp_path):
    env = EnvConfig(graphs=("alexnet",))
    policy = build_policy(env, 16, 2, [32])
    save_policy_file(tmp_path / "p.pt", policy, env, {"hidden": 16, "rounds": 2, "net_arch": [32]})
    loaded, env_again = load_policy_file(tmp_path / "p.pt")
    assert env_again == env
    for (k, a), (_, b) in zip(policy.state_dict().items(), loaded.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, msg=k)


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_policy_file_with_code_is_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": "placer.policy", "version": 1, "payload": _Evil()}, path)
    with pytest.raises(PolicyError, match="not a placer policy file"):
        load_policy_file(path)
    path.write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(PolicyError):
        load_policy_file(path)
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy_file(tmp_path / "missing.pt")


def test_lean_inference_picks_the_sb3_distribution_mode():
    from placer.policies.loading import greedy_action

    env = envs.ClusterPlacementEnv(graphs=("alexnet", "gnmt"), episode_jobs=40, load=2.0)
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    policy.eval()
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        mask = env.action_masks()
        action = greedy_action(policy, obs, mask)
        dist = policy.get_distribution({k: torch.as_tensor(v).unsqueeze(0).float() for k, v in obs.items()})
        dist.apply_masking(mask[None])
        assert action == int(dist.get_actions(deterministic=True)[0])
        assert mask[action]
        obs, _, done, *_ = env.step(action)
        if done:
            obs, _ = env.reset()


def test_a_policy_file_missing_its_env_is_a_clear_error(tmp_path):
    from placer.common.errors import PolicyError
    from placer.policies.model import FORMAT, VERSION, load_policy_file

    path = tmp_path / "noenv.pt"
    torch.save({"format": FORMAT, "version": VERSION, "policy": {}, "state_dict": {}}, path)
    with pytest.raises(PolicyError, match="malformed policy file: missing or bad field 'env'"):
        load_policy_file(path)


@pytest.mark.parametrize("advisers", [(), ("lean:admit=0.8+best_fit", "para_min")])
def test_cached_graph_encodings_give_the_same_decisions_as_full_observations(advisers):
    from placer.policies.loading import LearnedPolicy, greedy_action

    env = envs.ClusterPlacementEnv(graphs=("alexnet", "gnmt", "resnet18"), episode_jobs=40, load=2.0, queue="edf-bf", advisers=advisers)
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    policy.eval()
    learned = LearnedPolicy(policy, env.config)
    obs, _ = env.reset(seed=1)
    done, checked = False, 0
    while not done:
        mask = env.action_masks()
        expected = greedy_action(policy, obs, mask)  # the whole observation, the graph encoded from the policy's table
        chosen = learned.choose(env.offer, env.history, env.advice)  # the same offer and run state: the same observation
        assert chosen == decision(expected, env.offer.options)
        checked += mask.sum() > 1
        obs, _, done, _, _ = env.step(expected)
    assert checked > 10 and len(learned._graphs) == 3  # one encoding per distinct graph


def test_a_policy_with_advisers_decides_in_a_run_as_in_the_env():
    """LearnedPolicy.decide puts every offer to its advisers as the env does, so a run of it is the env's greedy episode."""
    from placer.baselines.policy import run_policy
    from placer.policies.loading import LearnedPolicy, greedy_action

    advisers = ("lean:admit=0.5+best_fit",)  # its admission reads the sizes of the run's jobs: a run must start it afresh
    graphs = ("alexnet", "gnmt", "resnet18")
    env = envs.ClusterPlacementEnv(graphs=graphs, episode_jobs=60, load=1.5, queue="edf-bf", size="loguniform:0.1:10", advisers=advisers)
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    policy.eval()
    obs, _ = env.reset(seed=3)
    done = False
    while not done:
        obs, _, done, _, _ = env.step(greedy_action(policy, obs, env.action_masks()))
    assert env.sim is not None
    learned = LearnedPolicy(policy, env.config)
    run = run_policy(learned, env.cost, env.stream, env.sim.queue, np.random.default_rng(0))
    assert outcomes(run.records) == outcomes(env.sim.records)
    episode, queue, records = env.stream, env.sim.queue, outcomes(env.sim.records)
    env.reset(seed=8)  # another stream first: an adviser not reset would carry its job sizes into the next run
    run_policy(learned, env.cost, env.stream, queue, np.random.default_rng(0))
    again = run_policy(learned, env.cost, episode, queue, np.random.default_rng(0))
    assert outcomes(again.records) == records
    with pytest.raises(ValueError, match="0 advisers' decisions for the config's 1 advisers"):
        learned.choose(env.offer, env.history)  # advice is passed, never remembered from an earlier offer


def test_env_and_policy_at_8192_devices_and_a_5000_op_graph(tmp_path):
    from tests.placer.toys import op, toy_graph

    cluster = (Path(__file__).parents[2] / "data" / "clusters" / "dgx8x8.toml").read_text()
    (tmp_path / "big.toml").write_text(cluster.replace('name = "dgx8x8"', 'name = "dgx1024x8"').replace("count = 8", "count = 1024"))
    nodes = {f"n{i}": op(1e-4 * (1 + i % 7), param_bytes=4e5, activation_bytes=1e6) for i in range(5000)}
    edges = {(f"n{i}", f"n{i + 1}"): 1e6 for i in range(4999)} | {(f"n{i}", f"n{i + 9}"): 1e5 for i in range(0, 4990, 10)}
    toy_graph(nodes, edges, name="deep5000", iterations=1000).to_json(tmp_path / "deep.json")
    env = envs.ClusterPlacementEnv(
        clusters=(str(tmp_path / "big.toml"),), graphs=(str(tmp_path / "deep.json"),), episode_jobs=4, max_nodes=5000, max_edges=6000
    )
    obs, _ = env.reset(seed=0)
    table = env.graph_table.arrays
    assert env.cost.cluster.num_devices == 8192 and table["node_mask"][obs["graph"][0]].sum() == 5000
    assert table["edge_mask"][obs["graph"][0]].sum() == 4999 + 499
    assert obs["groups"].shape == (64, 6) and obs["group_mask"].sum() == 64  # 1,024 servers in 64 groups of 16
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    policy.eval()
    steps = 0
    done = False
    while not done:
        with torch.no_grad():
            action, _ = policy.predict(obs, deterministic=True, action_masks=env.action_masks())
        obs, _, done, _, _ = env.step(int(action))
        steps += 1
    assert steps >= 1 and env.observation_space.contains(obs)


def test_learned_with_a_load_gate_is_the_shipped_policy_guarded_by_adaptive():
    from placer.baselines.adaptive import Adaptive
    from placer.baselines.guard import Guarded
    from placer.baselines.registry import PolicyContext, make_policy
    from placer.cluster.topology import load_cluster
    from placer.policies.loading import LearnedPolicy

    context = PolicyContext(load_cluster("dgx8x8"))
    guarded = make_policy("learned:pacml:below=1.15", context)
    assert isinstance(guarded, Guarded) and guarded.below == 1.15 and guarded.name == "learned:pacml:below=1.15"
    assert isinstance(guarded.policy, LearnedPolicy) and isinstance(guarded.by, Adaptive)
    assert isinstance(make_policy("learned:below=2", context), Guarded)
    slack = make_policy("learned:last=1.5", context)
    assert isinstance(slack, Guarded) and (slack.below, slack.last) == (float("inf"), 1.5)
    queue = make_policy("learned:pacml:waiting=3", context)
    assert isinstance(queue, Guarded) and (queue.below, queue.last, queue.waiting) == (float("inf"), None, 3)
    bad_names = ("learned:below=0", "learned:below=inf", "learned:below=x", "learned:pacml:below=1:below=2", "learned:gate=1")
    for bad in (*bad_names, "learned:last=0", "learned:waiting=0", "learned:waiting=1.5"):
        with pytest.raises(PolicyError, match="unknown policy"):
            make_policy(bad, context)


@pytest.mark.parametrize("detach", [False, True])
def test_a_detached_critic_trains_only_its_own_layers(detach):
    """PPO's value loss moves the shared graph network and scorer unless ``detach_critic`` is set; then only the
    critic's own layers (and SB3's value head) get a gradient, and the values themselves are unchanged."""
    env, observations = _observations(("alexnet",), n=4, load=2.0)
    policy = build_policy(env.config, 16, 2, [32], env.graph_table)
    obs = _batch(observations)
    values_before = policy.predict_values(obs).detach()
    policy.mlp_extractor.detach_critic = detach
    values = policy.predict_values(obs)
    torch.testing.assert_close(values.detach(), values_before)
    values.square().sum().backward()
    moved = {name for name, p in policy.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    critic_own = {name for name, _ in policy.named_parameters() if name.startswith(("mlp_extractor.critic.", "value_net."))}
    assert critic_own <= moved
    assert (moved == critic_own) is detach


@pytest.mark.parametrize("settings,screened", [({}, True), ({"advisers": ("lean", "random")}, False), ({"elastic": True}, False)])
def test_the_engine_rejects_for_a_learned_policy_only_what_it_would_reject_unasked(settings, screened):
    """A learned policy rejects every offer with nothing feasible and records it; not so where an adviser decides in
    Python (it must see each offer as made) or elastic (a shrink may make room)."""
    from placer.policies.loading import LearnedPolicy

    env = envs.ClusterPlacementEnv(graphs=("alexnet", "gnmt"), episode_jobs=20, **settings)
    learned = LearnedPolicy.of(build_policy(env.config, 16, 2, [32], env.graph_table), env.config)
    expected = (env.config.max_degree, env.config.rules) if screened else None
    assert learned.screen(env.cost.cluster) == expected
