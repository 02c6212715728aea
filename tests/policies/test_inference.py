"""The numpy inference path (placer.policies.inference, placer.policies.policy_file) against the torch one it replaces, and what a
decision imports."""

import collections
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from placer.cluster.topology import load_cluster
from placer.common.errors import PolicyError
from placer.common.shipped import default_policy_file, policy_names, shipped_policy_file
from placer.cost import CostModel
from placer.envs.action import action_mask, action_of, decision, option_table
from placer.envs.config import EnvConfig
from placer.envs.observation import GRAPH_KEYS, UNLISTED, GraphRef, Offer, forward_size, graph_arrays, observe
from placer.graphs.catalog import resolve_graph
from placer.policies.gnn import GraphEncoder
from placer.policies.imitation import teacher_targets
from placer.policies.inference import NumpyGraphEncoder, NumpyPolicy, load_inference_policy
from placer.policies.loading import LearnedPolicy, greedy_action
from placer.policies.model import FORMAT, VERSION, build_policy, load_policy_file, save_policy_file
from placer.policies.policy_file import read_policy_file
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from tests.policies.streams import stream

REPO = Path(__file__).resolve().parents[2]
RETIRED = sorted((REPO / "experiments" / "policies").glob("*.pt"))  # the retired policies, named by their files
SHIPPED = [shipped_policy_file(name) for name in policy_names()] + RETIRED


def _torch_encoding(encoder: GraphEncoder, arrays: dict[str, np.ndarray]) -> np.ndarray:
    with torch.inference_mode():
        return encoder(*(torch.as_tensor(arrays[k]).unsqueeze(0).float() for k in GRAPH_KEYS))[0].numpy()


def _numpy_weights(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("graph", ["densenet121", "gnmt"])
def test_the_numpy_encoder_equals_the_shipped_policys_torch_gnn_on_a_shipped_graph(graph):
    policy, _ = load_policy_file(default_policy_file())
    encoder = NumpyGraphEncoder.from_state_dict(_numpy_weights(policy))
    job_graph = resolve_graph(graph)
    nodes, edges = forward_size(job_graph)
    arrays = graph_arrays(job_graph, nodes + 7, edges + 5)  # with padding, which both drop
    expected = _torch_encoding(policy.pi_features_extractor.graph, arrays)
    got = encoder.encode(*(arrays[k] for k in GRAPH_KEYS))
    assert got.dtype == np.float32 and got.shape == expected.shape == (2 * encoder.hidden,)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert np.abs(expected).max() > 0.1  # not trivially equal


def test_the_numpy_encoder_equals_a_random_torch_gnn_on_a_random_graph():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    encoder = GraphEncoder(8, 1, hidden=24, rounds=3)
    with torch.no_grad():
        for conv, norm in zip(encoder.convs, encoder.norms, strict=True):
            conv.eps.fill_(float(rng.uniform(-0.5, 0.5)))  # a buffer GINEConv adds as (1 + eps) x_i: 0 would hide it
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    n, e = 40, 90
    keep = rng.random(n) < 0.7  # padding anywhere, not only at the end
    real = np.flatnonzero(keep)
    arrays = {
        "nodes": rng.random((n, 8)).astype(np.float32),
        "node_mask": keep.astype(np.float32),
        "edge_index": rng.choice(real, size=(2, e)).astype(np.int64),  # repeated edges and self-loops too
        "edges": rng.random((e, 1)).astype(np.float32),
        "edge_mask": (rng.random(e) < 0.8).astype(np.float32),
    }
    numpy_encoder = NumpyGraphEncoder.from_state_dict(_numpy_weights(encoder), prefix="")
    assert [conv[0] for conv in numpy_encoder.convs] == [pytest.approx(float(c.eps)) for c in encoder.convs]
    np.testing.assert_allclose(
        numpy_encoder.encode(*(arrays[k] for k in GRAPH_KEYS)), _torch_encoding(encoder, arrays), rtol=1e-5, atol=1e-5
    )
    lonely = {**arrays, "edge_mask": np.zeros(e, np.float32)}  # no edges: each node only its own message
    np.testing.assert_allclose(
        numpy_encoder.encode(*(lonely[k] for k in GRAPH_KEYS)), _torch_encoding(encoder, lonely), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_policy_file_reader_reads_what_torch_load_reads(path):
    payload = read_policy_file(path)
    reference = torch.load(path, map_location="cpu", weights_only=True)
    assert payload.env == EnvConfig.model_validate(reference["env"])
    assert (payload.hidden, payload.rounds, payload.net_arch) == tuple(reference["policy"][k] for k in ("hidden", "rounds", "net_arch"))
    assert payload.state_dict.keys() == reference["state_dict"].keys()
    for key, tensor in reference["state_dict"].items():
        array = payload.state_dict[key]
        assert array.dtype == np.float32 and array.flags.writeable and array.flags.c_contiguous
        np.testing.assert_array_equal(array, tensor.numpy(), err_msg=key)


def test_the_reader_rebuilds_views_and_falls_back_to_torch_for_what_it_does_not_know(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    weights = {"t": base.T, "slice": base[1:, 2:5], "long": torch.arange(5), "flag": torch.tensor([True, False])}
    arch = {"hidden": 8, "rounds": 1, "net_arch": [16]}
    payload = {"format": FORMAT, "version": VERSION, "env": EnvConfig().model_dump(mode="json"), "policy": arch, "state_dict": weights}
    torch.save(payload, tmp_path / "views.pt")
    read = read_policy_file(tmp_path / "views.pt").state_dict
    for key, tensor in weights.items():
        np.testing.assert_array_equal(read[key], tensor.numpy(), err_msg=key)
    payload["state_dict"] = {"p": torch.nn.Parameter(base)}  # weights_only reads a Parameter; this reader hands it to torch
    torch.save(payload, tmp_path / "parameter.pt")
    np.testing.assert_array_equal(read_policy_file(tmp_path / "parameter.pt").state_dict["p"], base.numpy())


def test_the_reader_never_reads_past_a_storage():
    from placer.policies.policy_file import _rebuild_tensor, _Unsupported

    storage = np.arange(6, dtype=np.float32)
    assert _rebuild_tensor(storage, 2, (2, 2), (2, 1), False, collections.OrderedDict()).tolist() == [[2, 3], [4, 5]]
    for offset, size, stride in ((3, (2, 2), (2, 1)), (0, (7,), (1,)), (0, (2, 3), (4, 1)), (-1, (2,), (1,))):
        with pytest.raises(_Unsupported):
            _rebuild_tensor(storage, offset, size, stride, False, collections.OrderedDict())


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_file_with_code_or_unfitting_weights_is_refused_in_one_line(tmp_path):
    torch.save({"format": FORMAT, "version": VERSION, "payload": _Evil()}, tmp_path / "evil.pt")
    with pytest.raises(PolicyError, match="not a placer policy file"):
        LearnedPolicy.from_file(tmp_path / "evil.pt")
    env = EnvConfig(graphs=("alexnet",))
    arch = {"hidden": 16, "rounds": 2, "net_arch": [32]}
    policy = build_policy(env, 16, 2, [32])
    save_policy_file(tmp_path / "p.pt", policy, env.model_copy(update={"history": True}), arch)  # the job MLP reads 12, not 20
    save_policy_file(tmp_path / "q.pt", policy, env, {**arch, "rounds": 3})
    payload = torch.load(tmp_path / "q.pt", weights_only=True)
    del payload["state_dict"]["pi_features_extractor.group.2.bias"]
    payload["policy"]["rounds"] = 2
    torch.save(payload, tmp_path / "r.pt")
    for name, expected in (("p.pt", "job.0 is"), ("q.pt", "2 rounds"), ("r.pt", "group.2.bias")):
        with pytest.raises(PolicyError, match="weights do not match the policy architecture: .*" + expected) as caught:
            load_inference_policy(tmp_path / name)
        assert "\n" not in str(caught.value)
    with pytest.raises(PolicyError, match="does not exist"):
        load_inference_policy(tmp_path / "missing.pt")


def test_learned_decides_as_the_torch_policy_on_a_stream():
    """Every decision of the shipped policy on a queued stream, numpy (LearnedPolicy) and torch (the SB3 policy: its GNN
    encodes, its actor scores), from the same offer, history and advice; and its soft imitation targets at temperature 1
    (:meth:`LearnedPolicy.estimates`) are the torch policy's action distribution."""
    path = default_policy_file()
    learned, (policy, env) = LearnedPolicy.from_file(path), load_policy_file(path)
    cost = CostModel(load_cluster("dgx8x8"))
    jobs = stream(cost, ("alexnet", "gnmt", "resnet50", "bert_base", "densenet121"), 1.2, 80, seed=3)
    learned.reset(np.random.default_rng(0))
    asked = []

    def decide(job, view):
        learned.history.observe(job)
        advice = learned.advisers.advise(job, view)
        offer = Offer(job, view, tuple(option_table(job, view, env.max_degree, env.rules)))
        chosen = learned.choose(offer, learned.history, advice)
        mask = action_mask(offer.options, env.max_degree, len(env.rules))
        if mask.sum() > 1:
            arrays = graph_arrays(job.graph, *forward_size(job.graph))
            with torch.inference_mode():
                encoding = policy.pi_features_extractor.encode_arrays(
                    {k: torch.as_tensor(arrays[k]).unsqueeze(0).float() for k in GRAPH_KEYS}
                )
            np.testing.assert_allclose(learned._graph(job)[0], encoding[0].numpy(), rtol=1e-5, atol=1e-5)
            obs = observe(offer, learned.history, env, GraphRef(UNLISTED, forward_size(job.graph)[0]), advice)
            assert chosen == decision(greedy_action(policy, obs, mask, encoding), offer.options)
            with torch.inference_mode():
                batch = {k: torch.from_numpy(np.ascontiguousarray(v)).unsqueeze(0).float() for k, v in obs.items()}
                features = policy.pi_features_extractor.forward_with_graph(encoding, batch)
                logits = policy.action_net(policy.mlp_extractor.forward_actor(features))[0]
                logits[~torch.from_numpy(mask)] = -torch.inf
                by_action = torch.softmax(logits.double(), 0).numpy()
            probabilities = np.zeros(len(mask))  # two actions placing on the same devices are one decision: the first's
            for a in np.flatnonzero(mask):
                probabilities[action_of(decision(int(a), offer.options), offer.options)] += by_action[a]
            soft = teacher_targets(learned, action_of(chosen, offer.options), offer.options, len(mask), temperature=1.0)
            np.testing.assert_allclose(soft, probabilities, atol=1e-4)  # the learned teacher's soft targets: its distribution
            asked.append(chosen)
        return chosen

    simulate(cost, jobs, decide, queue=QueueConfig.parse("edf-bf"))
    assert len(asked) > 40 and len({len(getattr(d, "devices", ())) for d in asked}) > 2  # many decisions, several degrees


def test_a_learned_policy_copies_with_its_cache_and_its_copy_decides_the_same():
    """A warm LearnedPolicy deep-copies and pickles (best's tuning copies its chosen member; process pools pickle), and the
    copy, its graph cache carried, makes the same decisions on a stream as a policy read fresh from the file."""
    import copy
    import pickle

    path = default_policy_file()
    cost = CostModel(load_cluster("dgx8x8"))
    jobs = stream(cost, ("alexnet", "gnmt", "resnet50"), 1.2, 40, seed=5)

    def decisions(policy):
        policy.reset(np.random.default_rng(0))
        made = []

        def decide(job, view):
            made.append(policy.decide(job, view))
            return made[-1]

        simulate(cost, jobs, decide, queue=QueueConfig.parse("edf-bf"))
        return made

    warm = LearnedPolicy.from_file(path)
    first = decisions(warm)
    cached = warm._graphs.items()
    assert cached and len({len(getattr(d, "devices", ())) for d in first}) > 1
    for twin in (copy.deepcopy(warm), pickle.loads(pickle.dumps(warm))):
        assert [k for k, _ in twin._graphs.items()] == [k for k, _ in cached] and twin._graphs._lock is not warm._graphs._lock
        assert decisions(twin) == first == decisions(LearnedPolicy.from_file(path))


def test_a_live_torch_policy_and_its_file_make_one_numpy_policy(tmp_path):
    env = EnvConfig(graphs=("alexnet",), advisers=("para_min",))
    policy = build_policy(env, 16, 2, [32])
    save_policy_file(tmp_path / "p.pt", policy, env, {"hidden": 16, "rounds": 2, "net_arch": [32]})
    from_file, env_again = load_inference_policy(tmp_path / "p.pt")
    live = NumpyPolicy.from_module(policy, env)
    assert env_again == env
    graph = graph_arrays(resolve_graph("alexnet"), *forward_size(resolve_graph("alexnet")))
    np.testing.assert_array_equal(from_file.encoder.encode(*graph.values()), live.encoder.encode(*graph.values()))
    np.testing.assert_array_equal(from_file.actor.option_rows, live.actor.option_rows)


def _run(code: str, **environ: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), **environ}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_a_learned_policy_however_built_decides_on_one_blas_thread():
    # numpy's BLAS starts at two threads here; its small matmuls on threads spin beside busy processes (2.6x slower)
    code = """
import threadpoolctl
from placer.common.shipped import default_policy_file
from placer.policies.loading import LearnedPolicy
before = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
LearnedPolicy.from_file(default_policy_file())
after = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
print(sorted(before), sorted(after))
"""
    assert _run(code, OPENBLAS_NUM_THREADS="2") == "[2] [1]"


HEAVY = ("torch", "torch_geometric", "gymnasium", "stable_baselines3", "sb3_contrib")


def test_a_learned_decision_imports_none_of_the_training_stack():
    code = f"""
import sys
import placer
decision = placer.place(placer.resolve_graph("resnet50"), "dgx8x8", {{}}, "learned")
assert decision.accepted, decision
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
"""
    assert _run(code) == "[]"


@pytest.mark.parametrize(
    "imports",
    [
        "import placer.envs, gymnasium as gym",
        "import gymnasium as gym, placer.envs",
        "import placer.envs.env, gymnasium as gym",
        "import placer.envs, placer.envs.observation",
    ],
)
def test_the_env_id_is_registered_whatever_is_imported_first(imports):
    code = f"""
{imports}
import gymnasium as gym
env = gym.make(placer.envs.ENV_ID, graphs=("alexnet",), episode_jobs=5)
obs, _ = env.reset(seed=0)
assert env.observation_space.contains(obs) and isinstance(env.unwrapped, placer.envs.ClusterPlacementEnv)
print("ok")
"""
    assert _run(code) == "ok"


def test_importing_envs_imports_neither_gymnasium_nor_the_env():
    assert (
        _run(
            "import sys, placer.envs, placer.envs.observation, placer.envs.action; "
            "print(sorted(m for m in ('gymnasium', 'placer.envs.env') if m in sys.modules))"
        )
        == "[]"
    )
