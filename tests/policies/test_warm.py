"""The warm start keeps what it recorded (``placer.policies.warm``): a run stopped after a recording records none again."""

import json

import numpy as np
import pytest
import torch

from placer.policies.demonstrations import Demonstrations
from placer.policies.train import train
from placer.policies.warm import RECORDED, recorded
from tests.policies.test_train import tiny_config


def _demonstrations(samples: int, seed: int) -> Demonstrations:
    rng = np.random.default_rng(seed)
    dynamic = {"job": rng.random((samples, 3), dtype=np.float32), "graph": rng.integers(0, 4, (samples, 1))}
    masks = rng.random((samples, 5)) < 0.5
    return Demonstrations(
        dynamic, masks, rng.integers(0, 5, samples), rng.random(samples, dtype=np.float32), rng.random((samples, 5), dtype=np.float32)
    )


def _same(a: Demonstrations, b: Demonstrations) -> bool:
    arrays = [(a.masks, b.masks), (a.actions, b.actions), (a.returns, b.returns), (a.targets, b.targets)]
    return a.dynamic.keys() == b.dynamic.keys() and all(
        x.dtype == y.dtype and np.array_equal(x, y) for x, y in [*arrays, *((a.dynamic[k], b.dynamic[k]) for k in a.dynamic)]
    )


def test_a_recording_is_read_back_only_when_what_made_it_is_the_same(tmp_path):
    path, made = tmp_path / "recorded" / "warm.npz", []

    def record(seed: int):
        made.append(seed)
        return _demonstrations(7, seed)

    first = recorded(path, {"seed": 1, "teacher": "lean"}, lambda spool: record(1))
    again = recorded(path, {"teacher": "lean", "seed": 1}, lambda spool: record(99))  # the same, keys in another order
    assert made == [1] and _same(first, again)
    other = recorded(path, {"seed": 2, "teacher": "lean"}, lambda spool: record(2))  # another seed: recorded anew, kept instead
    assert made == [1, 2] and _same(other, _demonstrations(7, 2))
    path.write_bytes(path.read_bytes()[:100])  # cut short by a crash mid-write (write_atomic prevents it; a disk may not)
    recorded(path, {"seed": 2, "teacher": "lean"}, lambda spool: record(3))
    assert made == [1, 2, 3]


@pytest.mark.slow
def test_a_run_stopped_in_its_warm_start_resumes_from_the_recordings_it_kept(tmp_path, monkeypatch):
    """Stopped while cloning, a run resumes without recording the teacher again, and its clone is the one an unstopped
    run makes; the clones are kept, and a DAgger round's recording serves a learner made the same way, whatever its
    last bits."""
    import placer.policies.warm as warm

    base = tiny_config(0)
    config = base.model_copy(
        update={"train": base.train.model_copy(update={"imitation_steps": 40, "dagger_rounds": 1, "dagger_steps": 16})}
    )
    whole = tmp_path / "whole"
    train(config, whole, progress=False)

    calls, real_collect, real_clone = [], warm.collect, warm.clone

    def counted(*args, **kwargs):
        calls.append(args[2])  # the steps asked for
        return real_collect(*args, **kwargs)

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "stopped"
    monkeypatch.setattr(warm, "collect", counted)
    with monkeypatch.context() as patch:
        patch.setattr(warm, "clone", stopped)  # stopped after recording the teacher, before its clone
        with pytest.raises(KeyboardInterrupt):
            train(config, out, progress=False)
    assert calls == [40] and (out / RECORDED / "warm.npz").exists() and not (out / "checkpoint.pt").exists()
    monkeypatch.setattr(warm, "clone", real_clone)
    train(config, out, resume=True, progress=False)
    assert calls == [40, 16]  # the DAgger round only
    assert json.loads((out / "imitation.json").read_text()) == json.loads((whole / "imitation.json").read_text())
    (out / "checkpoint.pt").unlink()
    monkeypatch.setattr(warm, "clone", stopped)
    train(config, out, resume=True, progress=False)  # every clone kept too: none made again
    assert calls == [40, 16] and sorted(p.name for p in (out / RECORDED).glob("clone-*.pt")) == ["clone-0.pt", "clone-1.pt"]
    assert json.loads((out / "imitation.json").read_text()) == json.loads((whole / "imitation.json").read_text())

    def perturbed(policy, *args, **kwargs):  # a clone made again, off in its last bits (threaded sums)
        accuracy = real_clone(policy, *args, **kwargs)
        with torch.no_grad():
            next(policy.parameters()).mul_(1 + 1e-7)
        return accuracy

    for path in [out / "checkpoint.pt", *(out / RECORDED).glob("clone-*.pt")]:
        path.unlink()
    monkeypatch.setattr(warm, "clone", perturbed)
    train(config, out, resume=True, progress=False)  # cloned again: the DAgger round's states are still read back
    assert calls == [40, 16]


def test_a_candidate_teachers_recording_is_keyed_by_its_files_bytes_not_its_path(tmp_path):
    """A run folder copied elsewhere (or resumed under another --out) reads its recordings back; another file does not."""
    from placer.policies.warm import recording_key, recording_what

    base = tiny_config(0)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder, content in [("a", b"weights"), ("b", b"weights")]:
        (tmp_path / folder / "rl-winner.pt").write_bytes(content)

    def key(path) -> str:
        config = base.model_copy(update={"train": base.train.model_copy(update={"candidate_policy_file": str(path)})})
        return recording_key(recording_what(config, {"policy_file": str(path)}))

    assert key(tmp_path / "a" / "rl-winner.pt") == key(tmp_path / "b" / "rl-winner.pt")
    (tmp_path / "b" / "rl-winner.pt").write_bytes(b"other weights")
    assert key(tmp_path / "a" / "rl-winner.pt") != key(tmp_path / "b" / "rl-winner.pt")


def _logits(policy, obs: dict[str, np.ndarray]) -> torch.Tensor:
    with torch.inference_mode():
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)).unsqueeze(0).float() for k, v in obs.items()}
        features = policy.pi_features_extractor(batch)
        return policy.action_net(policy.mlp_extractor.forward_actor(features))[0]


@pytest.mark.parametrize("elastic", [False, True])
def test_an_unadvised_policy_widened_for_advisers_scores_every_offer_as_before(tmp_path, elastic):
    """``start_weights`` of an unadvised policy for an advised network (``clone_from_candidate``): zero weights on the
    advice, so its logits on advised observations equal the unadvised policy's on the same observations without it."""
    from placer.envs.env import ClusterPlacementEnv
    from placer.policies.config import PolicySection, TrainSection
    from placer.policies.model import build_policy, save_policy_file
    from placer.policies.warm import start_weights

    settings = {"clusters": "dgx8x8", "graphs": ["alexnet", "resnet18", "gnmt"], "jobs": 60, "load": 1.1, "history": True}
    plain_env = ClusterPlacementEnv(**settings, elastic=elastic)
    advisers = ("lean", "para_min+best_fit", "switch:0.75")
    advised_env = ClusterPlacementEnv(**settings, elastic=elastic, advisers=advisers)
    torch.manual_seed(0)
    plain = build_policy(plain_env.config, 16, 2, [32], plain_env.graph_table).eval()
    save_policy_file(tmp_path / "plain.pt", plain, plain_env.config, {"hidden": 16, "rounds": 2, "net_arch": [32]})
    config = tiny_config(0).model_copy(
        update={"env": advised_env.config, "policy": PolicySection(hidden=16, rounds=2, net_arch=[32]), "train": TrainSection()}
    )
    advised = build_policy(advised_env.config, 16, 2, [32], advised_env.graph_table).eval()
    advised.load_state_dict(start_weights(str(tmp_path / "plain.pt"), config, "candidate_policy_file"))
    obs, _ = advised_env.reset(seed=3)
    marked, done, steps = 0, False, 0
    while not done and steps < 40:
        assert set(obs) - set(plain_env.observation_space.spaces) == {"advice"}
        marked += int(obs["advice"].any()) + int(obs["options"][:, -len(advisers) :].any())
        without = {k: v for k, v in obs.items() if k != "advice"}
        without["options"] = obs["options"][:, : -len(advisers)]
        torch.testing.assert_close(_logits(advised, obs), _logits(plain, without), rtol=0, atol=1e-5)
        obs, _, done, _, _ = advised_env.step(int(np.flatnonzero(advised_env.action_masks())[-1]))
        steps += 1
    assert marked > 10  # the advice was there to be ignored


def test_a_candidate_read_with_other_advisers_is_refused_in_one_line(tmp_path):
    from placer.common.errors import TrainingError
    from placer.envs.env import ClusterPlacementEnv
    from placer.policies.config import PolicySection
    from placer.policies.model import build_policy, save_policy_file
    from placer.policies.warm import start_weights

    settings = {"clusters": "dgx8x8", "graphs": ["alexnet", "resnet18"], "jobs": 20, "load": 0.9}
    one = ClusterPlacementEnv(**settings, advisers=("lean",))
    arch = {"hidden": 16, "rounds": 2, "net_arch": [32]}
    save_policy_file(tmp_path / "one.pt", build_policy(one.config, 16, 2, [32], one.graph_table), one.config, arch)
    other = ClusterPlacementEnv(**settings, advisers=("para_min",))
    config = tiny_config(0).model_copy(update={"env": other.config, "policy": PolicySection(hidden=16, rounds=2, net_arch=[32])})
    with pytest.raises(TrainingError, match="another advisers"):
        start_weights(str(tmp_path / "one.pt"), config, "candidate_policy_file")


def test_clone_from_candidate_needs_a_candidate_and_a_warm_start():
    from placer.common.errors import ConfigError
    from placer.policies.config import TrainConfig

    data = tiny_config(0).model_dump(mode="json")
    data["train"] |= {"clone_from_candidate": True, "imitation_steps": 40}
    with pytest.raises(ConfigError, match="clone_from_candidate"):  # no candidate_policy_file
        TrainConfig.model_validate(data)


def test_without_record_replayed_the_warm_start_records_no_replayed_arrivals():
    """``record_replayed = false``: the warm start's episodes draw only the other arrival structures (its recordings keyed
    by them), while tuning and validation keep all; an env of replayed arrivals alone records them; true (the default)
    records in the env as it is, so recordings kept before the field existed are read back."""
    from placer.envs.env import ClusterPlacementEnv
    from placer.policies.config import TrainConfig
    from placer.policies.warm import recording_env, recording_what

    data = tiny_config(0).model_dump(mode="json")
    data["env"]["workload"]["structure"] = ["iid", "daily", "replay:philly:part=train"]
    every = TrainConfig.model_validate(data)
    assert recording_env(every) is every.env
    data["train"]["record_replayed"] = False
    unreplayed = TrainConfig.model_validate(data)
    env = ClusterPlacementEnv(recording_env(unreplayed))
    assert {env.reset(seed=seed)[1]["structure"] for seed in range(12)} == {"iid", "daily"}
    assert unreplayed.env == every.env  # tuning and validation still see all three
    assert recording_what(unreplayed, {}) != recording_what(every, {})
    data["env"]["workload"]["structure"] = ["replay:philly:part=train"]
    replayed_only = TrainConfig.model_validate(data)
    assert recording_env(replayed_only) is replayed_only.env
