import pickle

import numpy as np
import pytest
import torch

import envs
from envs.config import EnvConfig
from placer.errors import PolicyError
from policies.extractor import PlacementExtractor
from policies.gnn import GraphEncoder
from policies.model import build_policy, load_policy_file, save_policy_file


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
    sizes = {int(o["node_mask"].sum()) for o in observations}
    assert len(sizes) > 1  # the batch mixes graph sizes
    extractor = PlacementExtractor(env.observation_space, hidden=16, rounds=2)
    features = extractor(_batch(observations))
    assert features.shape == (8, extractor.features_dim)
    assert extractor.features_dim == extractor.context_dim + 48 * 9 and extractor.context_dim == 2 * 16 + 32 + 64 + 3
    one_by_one = torch.cat([extractor(_batch([o])) for o in observations])
    torch.testing.assert_close(features, one_by_one, rtol=1e-5, atol=1e-5)


def test_graph_encoding_ignores_padding():
    encoder = GraphEncoder(8, 1, hidden=8, rounds=2)
    _, small = _observations(("alexnet",), n=1, max_nodes=512, max_edges=1024)
    _, big = _observations(("alexnet",), n=1, max_nodes=900, max_edges=2000)
    enc = [encoder(*(_batch(o)[k] for k in ("nodes", "node_mask", "edge_index", "edges", "edge_mask"))) for o in (small, big)]
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
    from policies.loading import greedy_action

    env = envs.ClusterPlacementEnv(graphs=("alexnet", "gnmt"), episode_jobs=40, load=2.0)
    policy = build_policy(env.config, 16, 2, [32])
    policy.eval()
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        mask = env.action_masks()
        action = greedy_action(policy, obs, mask)
        dist = policy.get_distribution({k: torch.as_tensor(v).unsqueeze(0).float() for k, v in obs.items()})
        dist.apply_masking(mask[None])
        assert action == int(dist.get_actions(deterministic=True)[0])
        assert mask[action]
        obs, *_ = env.step(action)


def test_a_policy_file_missing_its_env_is_a_clear_error(tmp_path):
    from placer.errors import PolicyError
    from policies.model import FORMAT, VERSION, load_policy_file

    path = tmp_path / "noenv.pt"
    torch.save({"format": FORMAT, "version": VERSION, "policy": {}, "state_dict": {}}, path)
    with pytest.raises(PolicyError, match="malformed policy file: missing or bad field 'env'"):
        load_policy_file(path)
