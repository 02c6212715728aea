import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from placer.cluster.topology import load_cluster
from placer.common.errors import PlacerError
from placer.common.shipped import data_dir
from placer.cost import CostModel
from placer.envs.config import EnvConfig
from placer.graphs.catalog import resolve_graph
from placer.policies.config import PolicySection, PPOSection, TrainConfig, TrainSection
from placer.policies.loading import LearnedPolicy
from placer.policies.policy_file import read_policy_file
from placer.policies.teachers import teacher_members, with_baseline
from placer.policies.train import train
from placer.sim.rollout import simulate
from placer.workloads.generator import BetaDistribution, Workload


def tiny_config(timesteps=256):
    return TrainConfig(
        env=EnvConfig(graphs=["alexnet", "gnmt"], episode_jobs=32, max_nodes=64, max_edges=128),
        ppo=PPOSection(n_envs=2, n_steps=64, batch_size=64, n_epochs=1),
        policy=PolicySection(hidden=8, rounds=1, net_arch=[16]),
        train=TrainSection(timesteps=timesteps, checkpoint_every=128, eval_every=128, eval_episodes=1, torch_threads=1),
    )


@pytest.mark.slow
def test_tiny_training_run_writes_a_usable_policy_and_resumes(tmp_path):
    out = tmp_path / "run"
    phases = []
    final = train(tiny_config(256), out, progress=False, report=phases.append)
    assert [p.split(" ")[0] for p in phases[:3]] == ["validating", "validating", "paired"]  # no warm start in the tiny config
    assert final.exists() and (out / "checkpoint.pt").exists() and (out / "tb").is_dir()
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    assert rows and {"timesteps", "learned", "para_min", "lean"} <= set(rows[0])
    summary = json.loads((out / "summary.json").read_text())  # the closing paired validation, on the same streams
    assert summary["streams"] == 4  # 4 beta distributions x 1 seed
    assert [r["policy"] for r in summary["rows"]] == ["learned", "lean (teacher)", "para_min", "para_min+best_fit"]
    learned, *others = summary["rows"]
    assert learned["blocking"] == pytest.approx(rows[-1]["learned"]) and others[0]["blocking"] == pytest.approx(rows[-1]["lean"])
    assert all(r["minus_learned"] == pytest.approx(r["blocking"] - learned["blocking"]) for r in others)
    assert any(line.startswith("  lean (teacher)") and "±" in line for line in phases)
    policy = LearnedPolicy.from_file(final)
    cluster = load_cluster("pacml")
    workload = Workload([resolve_graph("alexnet")], BetaDistribution("A"), 0.9, cluster.num_devices, 30)
    run = simulate(CostModel(cluster), workload.jobs(np.random.default_rng(0)), policy.decide)
    assert run.metrics.jobs == 30
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run_dir,) = (out / "tb").iterdir()
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert "rollout/ep_rew_mean" in events.Tags()["scalars"]  # the Monitor wrapper feeds it
    train(tiny_config(512), out, resume=True, progress=False)
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    assert rows[-1]["timesteps"] >= 512 and rows[0]["timesteps"] < 512
    assert len(list((out / "tb").iterdir())) == 2  # the resumed run logs to its own folder


@pytest.mark.slow
def test_evaluate_runs_the_learned_policy_and_its_ablation(tmp_path):
    final = train(tiny_config(128), tmp_path / "run", progress=False)
    out = tmp_path / "eval"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "evaluate",
            "--graphs",
            "alexnet,resnet101",
            "--beta-dist",
            "C",
            "--jobs",
            "30",
            "--seeds",
            "1",
            "--policies",
            "learned,learned+first_fit,para_min",
            "--policy-file",
            str(final),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["policy"] for r in runs] == ["learned", "learned+first_fit", "para_min"]


def test_missing_policy_file_is_one_line_error(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "evaluate",
            "--policies",
            "learned",
            "--policy-file",
            str(tmp_path / "nope.pt"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "does not exist" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_best_policy_is_never_replaced_by_a_worse_final_one(tmp_path, monkeypatch):
    import placer.policies.train as training

    monkeypatch.setattr(training.RatesCache, "rates", lambda *args, **kwargs: np.array([0.3]))  # the 3 baselines
    rates = iter([0.5, 0.2, 0.9])  # the policy at step 0, at step 128, then the worse final one (validated per stream)
    monkeypatch.setattr(training.RatesCache, "file_rates", lambda *args, **kwargs: np.array([next(rates, 0.9)]))
    out = tmp_path / "run"
    final = train(tiny_config(128), out, progress=False)
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    best = min(rows, key=lambda r: r["learned"])
    assert best["learned"] == 0.2 and rows[-1]["learned"] == 0.9
    assert final.read_bytes() == (out / "last.pt").read_bytes()
    assert (out / "best.pt").read_bytes() != final.read_bytes()


def test_training_refuses_a_non_empty_out_a_file_and_a_bad_budget(tmp_path):

    used = tmp_path / "used"
    used.mkdir()
    (used / "policy.pt").write_text("earlier run")
    with pytest.raises(PlacerError, match="not empty: pass --resume"):
        train(tiny_config(), used, progress=False)
    assert (used / "policy.pt").read_text() == "earlier run"
    (tmp_path / "file").write_text("x")
    with pytest.raises(PlacerError, match="is a file"):
        train(tiny_config(), tmp_path / "file", progress=False)
    with pytest.raises(PlacerError, match="--timesteps must be a number of environment steps >= 0"):
        train(tiny_config(), tmp_path / "new", timesteps=-1, progress=False)


def test_a_truncated_eval_log_keeps_its_complete_rows(tmp_path):
    from placer.policies.train import read_eval_rows

    log = tmp_path / "eval.jsonl"
    log.write_text('{"timesteps": 0, "learned": 0.2}\n{"timesteps": 10240, "learned": 0.1}\n{"timesteps": 204')
    assert [r["learned"] for r in read_eval_rows(log)] == [0.2, 0.1]


@pytest.mark.slow
def test_env_processes_train_the_same_policy_as_one_process(tmp_path):
    import torch

    weights = []
    for vec_env in ("dummy", "subproc"):
        base = tiny_config(128)
        config = base.model_copy(update={"ppo": base.ppo.model_copy(update={"vec_env": vec_env})})
        final = train(config, tmp_path / vec_env, progress=False)
        weights.append(torch.load(final, weights_only=True)["state_dict"])
    for key in weights[0]:
        torch.testing.assert_close(weights[0][key], weights[1][key], msg=key)


def test_device_auto_is_the_cpu_here_and_cuda_without_a_gpu_is_refused():
    import torch

    from placer.common.errors import PlacerError
    from placer.policies.train import resolve_device

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(PlacerError, match="no CUDA device"):
            resolve_device("cuda")


def test_online_reference_and_the_promotion_gate(tmp_path):
    from placer.policies.promotion import promote_if_not_worse as _promote
    from placer.policies.validation import PairedRow, PairedSummary, online_reference

    assert online_reference("hindsight:admit=0.9:h=24:m=0.5") == "lean:admit=0.9"
    assert online_reference("hindsight:h=4+best_fit@edf") == "lean+best_fit@edf"
    assert online_reference("lean@edf") == "lean@edf"

    def summary(minus_learned):
        rows = [
            PairedRow(policy="learned", blocking=0.2, blocking_half=0.01, minus_learned=None, minus_learned_half=None),
            PairedRow(
                policy="lean:admit=0.9",
                blocking=0.2 + minus_learned,
                blocking_half=0.01,
                minus_learned=minus_learned,
                minus_learned_half=0.01,
            ),
        ]
        return PairedSummary(streams=4, teacher="hindsight:admit=0.9:h=24", reference="lean:admit=0.9", rows=rows)

    final, target, said = tmp_path / "policy.pt", tmp_path / "shipped" / "p.pt", []
    final.write_bytes(b"new")
    _promote(final, target, summary(-0.02), said.append)  # the learned policy blocks 2 points more, +-1: refused
    assert not target.exists() and "not promoted" in said[-1]
    _promote(final, target, summary(-0.004), said.append)  # 0.4 points more, +-1: no difference resolved, promoted
    assert target.read_bytes() == b"new" and "promoted" in said[-1]
    target.unlink()
    _promote(final, target, summary(0.0), said.append)
    assert target.read_bytes() == b"new" and target.with_suffix(".summary.json").exists() and "promoted" in said[-1]


@pytest.mark.slow
def test_a_run_killed_after_its_warm_start_resumes_without_recording_again(tmp_path, monkeypatch):
    """The warm start (minutes to an hour of recording) is checkpointed before the first validation: a run killed there
    resumes from the clone it made, the same weights, and records nothing again."""
    import placer.policies.train as training

    config = tiny_config(0).model_copy(update={"train": tiny_config(0).train.model_copy(update={"imitation_steps": 40})})
    out, phases = tmp_path / "run", []

    def killed(*args, **kwargs):  # a crash or SIGKILL, not Ctrl-C or SIGTERM (those checkpoint on their way out)
        raise RuntimeError("killed")

    with monkeypatch.context() as patch:
        patch.setattr(training.MaskablePPO, "learn", killed)  # killed in the first validation
        with pytest.raises(RuntimeError, match="killed"):
            train(config, out, progress=False)
    cloned = torch.load(out / "checkpoint.pt", weights_only=True)["policy"]
    recorded = []
    monkeypatch.setattr(training, "warm_start", lambda *args, **kwargs: recorded.append(args))
    train(config, out, resume=True, progress=False, report=phases.append)
    assert not recorded and not any(p.startswith(("warm start", "--resume: no")) for p in phases)
    final = read_policy_file(out / "policy.pt").state_dict  # no PPO step: the final policy is the clone
    shared = final.keys() & cloned.keys()
    assert shared and all(np.array_equal(final[k], cloned[k].numpy()) for k in shared)


def test_resume_into_a_folder_without_a_checkpoint_says_it_starts_from_scratch(tmp_path):
    phases = []
    train(tiny_config(256), tmp_path / "empty", timesteps=0, resume=True, progress=False, report=phases.append)
    assert phases[0] == f"--resume: no {tmp_path / 'empty' / 'checkpoint.pt'} to continue from; starting from scratch"


@pytest.mark.slow
def test_a_policy_cloned_from_best_per_load_reads_the_meter_and_is_validated_against_best(tmp_path):
    env = EnvConfig(
        clusters=["dgx8x8"], graphs=["alexnet", "gnmt"], loads=(0.5, 1.3), meter=True, reward="mission", beta_dists=["B", "C"],
        queue="edf-bf", size="loguniform:0.1:10", episode_jobs=32, max_nodes=64, max_edges=128,
    )  # fmt: skip
    config = tiny_config(0).model_copy(update={"env": env})
    config = config.model_copy(
        update={
            "train": config.train.model_copy(
                update={"imitation_teacher": "best", "teacher_pooled": ["beta_dist"], "imitation_steps": 64, "imitation_per_episode": 8}
            )
        }
    )
    phases: list[str] = []
    final = train(config, tmp_path / "run", progress=False, report=phases.append)
    imitation = json.loads((tmp_path / "run" / "imitation.json").read_text())
    assert imitation["samples"] == 64  # 8 decisions of each of 8 episodes (whole episodes would record 70 here)
    members = imitation["members"]
    assert (
        len(members) == 4
        and members["dgx8x8|0.5|B|edf-bf:32|loguniform:0.1:10|iid"] == members["dgx8x8|0.5|C|edf-bf:32|loguniform:0.1:10|iid"]
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["reference"] == "best" and summary["streams"] == 4  # 2 loads x 2 beta distributions
    assert sum(p.startswith("validating") for p in phases) == 1  # no PPO: the starting policy is the final one, validated once
    assert LearnedPolicy.from_file(final).env.meter


@pytest.mark.slow
def test_ppo_from_a_policy_file_against_the_teachers_reward_on_the_same_arrivals(tmp_path):
    """init_policy starts from a file's weights with the critic at 0; ppo_baseline makes the env subtract each regime's
    member (tuned once, kept in members.json for a resume); a file of another network is one line."""
    env = EnvConfig(
        clusters=["dgx8x8"], graphs=["alexnet", "gnmt"], loads=(0.5, 1.3), reward="mission", queue="edf-bf",
        size="loguniform:0.1:10", episode_jobs=32, max_nodes=64, max_edges=128,
    )  # fmt: skip
    config = tiny_config(0).model_copy(update={"env": env})
    first = train(config, tmp_path / "start", progress=False)
    settings = {"imitation_teacher": "best", "init_policy": str(first), "ppo_baseline": True, "timesteps": 128}
    config = config.model_copy(update={"train": config.train.model_copy(update=settings)})
    phases: list[str] = []
    final = train(config, tmp_path / "run", progress=False, report=phases.append)
    members = json.loads((tmp_path / "run" / "members.json").read_text())["members"]
    assert len(members) == 8 and all(isinstance(name, str) for name in members.values())  # 2 loads x beta A-D
    assert any(p.startswith(f"starting from the weights of {first}") for p in phases)
    learned = LearnedPolicy.from_file(final)
    assert learned.env.baseline == members  # the policy file says what its rewards were measured against
    start = torch.load(first, weights_only=True)["state_dict"]
    trained = torch.load(final, weights_only=True)["state_dict"]
    assert not torch.equal(start["value_net.weight"], trained["value_net.weight"])  # moved from 0 by PPO's 128 steps
    (tmp_path / "run" / "members.json").write_text("not json")  # a file we did not write, or another config's: tuned again
    assert teacher_members(config, tmp_path / "run", progress=False) == members
    fewer = config.model_copy(update={"env": config.env.with_changes(loads=(0.5,))})
    assert len(teacher_members(fewer, tmp_path / "run", progress=False) or {}) == 4
    other = config.model_copy(update={"policy": PolicySection(hidden=16, rounds=1, net_arch=[16])})
    with pytest.raises(PlacerError, match="does not fit this config's network"):
        train(other, tmp_path / "other", progress=False)


def test_a_bad_init_policy_is_one_line_before_anything_is_written(tmp_path):
    config = tiny_config(0)
    for path, message in (
        (tmp_path / "nope.pt", "does not exist"),
        (data_dir() / "policies" / "pacml.pt", "does not fit this config's network: Unexpected key"),
    ):
        bad = config.model_copy(update={"train": config.train.model_copy(update={"init_policy": str(path)})})
        with pytest.raises(PlacerError, match=message):
            train(bad, tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists()
    first = train(config, tmp_path / "first", progress=False)
    other = config.model_copy(
        update={"env": config.env.with_changes(max_degree=8), "train": config.train.model_copy(update={"init_policy": str(first)})}
    )
    with pytest.raises(PlacerError, match="trained with another max_degree"):
        train(other, tmp_path / "second", progress=False)


def test_one_baseline_at_a_time_and_a_teacher_that_needs_tuning_is_refused_at_once(tmp_path):
    config = tiny_config(0)
    with pytest.raises(PlacerError, match="not both"):
        config.model_validate(
            {**config.model_dump(), "env": {**config.env.model_dump(), "baseline": "lean"}, "train": {"ppo_baseline": True}}
        )
    with pytest.raises(PlacerError, match="nosuch"):
        config.model_validate({**config.model_dump(), "train": {"imitation_teacher": "nosuch"}})
    with pytest.raises(PlacerError, match="set \\[env\\] elastic = true"):
        config.model_validate({**config.model_dump(), "train": {"imitation_teacher": "elastic-best"}})
    elastic = {**config.model_dump(), "env": {**config.env.model_dump(), "elastic": True}}
    with pytest.raises(PlacerError, match="elastic-best cannot be it"):
        config.model_validate({**elastic, "train": {"imitation_teacher": "elastic-best", "ppo_baseline": True}})
    assert config.model_validate({**elastic, "train": {"imitation_teacher": "elastic-best"}}).train.imitation_teacher == "elastic-best"
    adaptive = config.model_copy(update={"train": config.train.model_copy(update={"ppo_baseline": True, "imitation_teacher": "adaptive"})})
    with pytest.raises(PlacerError, match="ppo_baseline: the teacher 'adaptive' cannot be the baseline"):
        train(adaptive, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_a_configured_baseline_is_shaped_for_ppos_discount():
    config = tiny_config(0)
    config = config.model_copy(
        update={"env": config.env.with_changes(baseline="lean"), "ppo": config.ppo.model_copy(update={"gamma": 0.95})}
    )
    assert with_baseline(config, None).env.baseline_discount == 0.95
    assert with_baseline(tiny_config(0), None) == tiny_config(0)  # no baseline, nothing changes


def test_anchored_ppo_adds_the_kl_to_its_starting_policy_and_nothing_else(tmp_path):
    """anchor_kl: each sample's entropy slot is ent_coef * H - anchor_kl * KL(anchor || policy), KL computed as torch
    does over the unmasked actions; 0 where the policy is its anchor; the anchor is not saved or optimised."""
    from torch.distributions import Categorical, kl_divergence

    from placer.policies.train import _anchor, build_model

    config = tiny_config()
    config = config.model_copy(update={"ppo": config.ppo.model_copy(update={"anchor_kl": 0.5, "ent_coef": 0.01})})
    model = build_model(config, tmp_path)
    _anchor(model, config, tmp_path / "anchor.pt")
    assert model.ent_coef == 1.0 and (tmp_path / "anchor.pt").exists()
    policy = model.policy
    assert not any("anchor" in key for key in policy.state_dict())
    assert {id(p) for group in policy.optimizer.param_groups for p in group["params"]} == {id(p) for p in policy.parameters()}
    model.collect_rollouts(model.env, model._setup_learn(128, callback=None)[1], model.rollout_buffer, n_rollout_steps=64)
    data = next(model.rollout_buffer.get(16))
    actions, masks = data.actions.long().flatten(), data.action_masks
    _, _, term = policy.evaluate_actions(data.observations, actions, action_masks=masks)
    entropy = policy.get_distribution(data.observations, action_masks=masks).entropy()
    assert torch.allclose(term, 0.01 * entropy, atol=1e-6)  # the policy is its anchor: KL 0
    with torch.no_grad():
        policy.mlp_extractor.option_score.weight.add_(0.5)  # move the policy off its anchor
    _, _, term = policy.evaluate_actions(data.observations, actions, action_masks=masks)
    moved = policy.get_distribution(data.observations, action_masks=masks).distribution
    anchor = policy._anchor[0].get_distribution(data.observations, action_masks=masks).distribution
    masked = masks.bool()
    expected = torch.stack([
        kl_divergence(Categorical(logits=a[m]), Categorical(logits=b[m]))
        for a, b, m in zip(anchor.logits, moved.logits, masked, strict=True)
    ])  # fmt: skip
    assert expected.max() > 1e-4
    assert torch.allclose(term, 0.01 * moved.entropy() - 0.5 * expected, atol=1e-5)
    resumed = build_model(config, tmp_path)
    with torch.no_grad():
        resumed.policy.mlp_extractor.option_score.weight.add_(1.0)  # where a resumed run's checkpoint left it
    _anchor(resumed, config, tmp_path / "anchor.pt")  # a resume anchors to the file, not to its own start
    assert all(torch.equal(resumed.policy._anchor[0].state_dict()[k], v) for k, v in policy._anchor[0].state_dict().items())


def test_a_tuned_teacher_table_serves_a_config_that_differs_only_in_what_the_student_sees(tmp_path):
    """members.json is keyed by the streams the teacher was tuned on: observations, reward and baseline do not re-tune."""
    from placer.policies.teachers import OBSERVATION_FIELDS

    config = tiny_config(0)
    config = config.model_copy(update={"train": config.train.model_copy(update={"imitation_teacher": "best", "ppo_baseline": True})})
    env = config.env.model_dump(mode="json", exclude=set(OBSERVATION_FIELDS))
    saved = {"tuned_for": {"env": env, "teacher": "best", "pooled": config.train.teacher_pooled}, "members": {"a|regime": "lean"}}
    (tmp_path / "members.json").write_text(json.dumps(saved))
    seeing = config.env.with_changes(
        meter=True, history=True, advisers=["lean"], reward="mission", baseline_arrival_discount=1.0, elastic=True, resize_offers=2
    )
    assert teacher_members(config.model_copy(update={"env": seeing}), tmp_path, progress=False) == {"a|regime": "lean"}
    saved["tuned_for"]["env"]["max_degree"] = 8  # a table tuned for other streams or options is not read back
    (tmp_path / "members.json").write_text(json.dumps(saved))
    tuned = teacher_members(config, tmp_path, progress=False) or {}
    assert "a|regime" not in tuned and len(tuned) == 4  # tuned again: its regimes, beta A-D at one load
    with_candidate = config.model_copy(update={"train": config.train.model_copy(update={"teacher_candidates": ["fixed:1"]})})
    members = teacher_members(with_candidate, tmp_path, progress=False) or {}
    saved = json.loads((tmp_path / "members.json").read_text())
    assert saved["tuned_for"]["candidates"] == ["fixed:1"]  # tuned again: a table tuned without the candidate is not read
    assert set(saved["tuning"]) == set(members) == set(tuned)  # one group per regime: nothing pooled
    for key, scores in saved["tuning"].items():  # the families' best (as tuned without the candidate), the candidate, its lead
        assert set(scores) == {tuned[key], "fixed:1", "fixed:1 lead", "fixed:1 lead half"}
        assert scores["fixed:1 lead"] == pytest.approx(scores[tuned[key]] - scores["fixed:1"]) and scores["fixed:1 lead half"] >= 0
        assert members[key] == ("fixed:1" if scores["fixed:1"] < scores[tuned[key]] else tuned[key])
    resolved = with_candidate.model_copy(update={"train": with_candidate.train.model_copy(update={"teacher_resolved": True})})
    strict = teacher_members(resolved, tmp_path, progress=False) or {}
    saved = json.loads((tmp_path / "members.json").read_text())
    assert saved["tuned_for"]["resolved"] is True  # tuned again: a table chosen without the interval is not read
    for key, scores in saved["tuning"].items():
        led = scores["fixed:1 lead"] - scores["fixed:1 lead half"] > 0
        assert strict[key] == ("fixed:1" if led and scores["fixed:1"] < scores[tuned[key]] else tuned[key])


def test_a_resume_may_spread_the_run_differently_but_not_change_what_it_learns():
    from placer.policies.run_folder import _without_budget

    config = tiny_config().model_dump(mode="json")
    spread = {**config, "train": {**config["train"], "eval_workers": 5, "device": "auto", "timesteps": 10**6}}
    spread["ppo"] = {**config["ppo"], "vec_env": "subproc" if config["ppo"]["vec_env"] == "dummy" else "dummy"}
    assert _without_budget(spread) == _without_budget(config)
    other = {**config, "train": {**config["train"], "seed": 7}}
    assert _without_budget(other) != _without_budget(config)


def test_a_copied_run_resumes_but_one_whose_policy_file_changed_under_the_same_path_does_not(tmp_path):
    from placer.policies.run_folder import INPUTS, check_same_config, policy_inputs

    def started_from(path):
        config = tiny_config()
        return config.model_copy(update={"train": config.train.model_copy(update={"init_policy": str(path)})})

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "policy.pt").write_bytes(b"weights")
    (tmp_path / "b" / "policy.pt").write_bytes(b"weights")
    run, first = tmp_path / "run", started_from(tmp_path / "a" / "policy.pt")
    run.mkdir()
    (run / "config.json").write_text(first.model_dump_json())
    (run / INPUTS).write_text(json.dumps(policy_inputs(first)))
    moved = started_from(tmp_path / "b" / "policy.pt")  # the run and its start copied elsewhere: the same bytes
    check_same_config(run / "config.json", moved, policy_inputs(moved))
    (tmp_path / "a" / "policy.pt").write_bytes(b"other weights")  # the same path, another file
    with pytest.raises(PlacerError, match="trained from other policy files"):
        check_same_config(run / "config.json", first, policy_inputs(first))
    (run / INPUTS).unlink()  # a run from before inputs.json: its paths are all it recorded
    with pytest.raises(PlacerError, match="trained with another config"):
        check_same_config(run / "config.json", moved, policy_inputs(moved))
    check_same_config(run / "config.json", first, policy_inputs(first))


@pytest.mark.slow
def test_a_policy_trained_to_resize_running_jobs_resizes_them_in_placer_evaluate(tmp_path):
    """``elastic = true`` in [env]: PPO trains on resize offers too, the policy file says so, and ``placer evaluate`` runs
    it elastic (its runs count resizes), beside fixed heuristics on the same streams."""
    config = tiny_config(256)
    config = config.model_copy(update={"env": config.env.with_changes(elastic=True, reward="mission", clusters="dgx8x8", load=0.7)})
    final = train(config, tmp_path / "run", progress=False)
    assert LearnedPolicy.from_file(final).elastic
    out = tmp_path / "eval"
    command = [sys.executable, "-m", "placer", "evaluate", "--cluster", "dgx8x8", "--graphs", "alexnet,gnmt", "--jobs", "40"]
    command += ["--seeds", "1", "--beta-dist", "C", "--policies", f"learned=elastic:{final},lean", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    runs = {r["policy"]: r for r in json.loads((out / "results.json").read_text())["runs"]}
    assert set(runs) == {"elastic", "lean"} and "resizes" in runs["elastic"]
    assert runs["lean"]["resizes"] == 0


def test_target_kl_reaches_ppo_and_is_off_by_default(tmp_path):
    from placer.policies.train import build_model

    assert build_model(tiny_config(), tmp_path / "a").target_kl is None
    config = TrainConfig.model_validate({**tiny_config().model_dump(), "ppo": {**tiny_config().ppo.model_dump(), "target_kl": 0.02}})
    assert build_model(config, tmp_path / "b").target_kl == 0.02
    with pytest.raises(ValueError, match="target_kl"):
        TrainConfig.model_validate({**tiny_config().model_dump(), "ppo": {"target_kl": 0}})
