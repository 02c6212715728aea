"""Training spread over the local multi-node Ray cluster gives what it gives here: tuning, validation, the recipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from placer.envs.config import EnvConfig

REPO = Path(__file__).resolve().parents[3]


def test_tuning_and_validation_on_ray_give_the_figures_they_give_here(ray_address):
    from placer.common.shipped import shipped_policy_file
    from placer.policies.loading import LearnedPolicy
    from placer.policies.teachers import regime_members
    from placer.policies.validation import policy_file_rates, validation_rates

    env = EnvConfig(clusters=("pacml", "dgx8x8"), graphs=["alexnet", "gnmt"], episode_jobs=24, loads=(0.7, 1.3), max_nodes=64)
    here = validation_rates("para_min", env, 1)
    assert len(here) == 16 and len(set(here.tolist())) > 1  # distinct streams, so an order mix-up would show
    np.testing.assert_array_equal(validation_rates("para_min", env, 1, ray=ray_address), here)

    tuning = EnvConfig(
        clusters=("dgx8x8",), graphs=("alexnet", "gnmt"), loads=(0.5, 1.3), beta_dists=("C",), queue="edf-bf", jobs=40, max_nodes=64
    )
    scores_here: dict = {}
    scores_there: dict = {}
    assert regime_members(tuning, ray=ray_address, scores=scores_there) == regime_members(tuning, scores=scores_here)
    assert scores_there == scores_here and len(scores_here) == 2

    path = shipped_policy_file("pacml")
    data = LearnedPolicy.from_file(path).env.model_dump()
    data["workload"] |= {"jobs": 24, "beta_dists": ["A", "C"], "size": ["const"], "queue": ["none"]}
    learned_env = EnvConfig.model_validate(data | {"clusters": ["pacml"], "loads": [0.9, 1.3]})
    learned = validation_rates(LearnedPolicy.from_file(path), learned_env, 1)
    assert policy_file_rates(path, learned_env, 1, ray=ray_address).tolist() == learned.tolist()


def test_a_recording_on_ray_records_the_decisions_its_worker_processes_record(ray_address, tmp_path):
    from placer.policies.imitation import collect

    config = EnvConfig(clusters=("dgx8x8",), graphs=("alexnet", "gnmt"), episode_jobs=40, max_nodes=64, max_edges=128)
    here = collect(config, "lean", 90, seed=3, workers=2)
    there = collect(config, "lean", 90, seed=3, workers=2, ray=ray_address, spool=tmp_path / "spool")
    assert len(there) == len(here) and (there.actions == here.actions).all() and (there.returns == here.returns).all()
    assert sorted(p.name for p in (tmp_path / "spool").iterdir()) == ["worker-0", "worker-1"]  # each task kept its episodes


def test_placer_train_on_ray_makes_the_policies_the_recipe_makes_here(ray_address, tmp_path):
    from placer.policies.policy_file import read_policy_file
    from placer.policies.recipe import load_recipe, run_recipe

    quick = REPO / "data" / "configs" / "quick.toml"
    here = tmp_path / "here"
    run_recipe(load_recipe(quick, here), here, timesteps=256, progress=False)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = ["-m", "placer", "train", "--config", str(quick), "--out", "there", "--timesteps", "256", "--ray", ray_address]
    done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on the Ray cluster at {ray_address}" in done.stderr and "2 stages, on the Ray cluster" in done.stderr
    assert "[rl-seed2] finished in" in done.stderr
    there = tmp_path / "there"
    assert "[rl-seed1] validating the final policy" in (there / "rl-seed1.log").read_text()  # kept, however Ray's log
    for name in ("clone/policy.pt", "rl-seed1/best.pt", "rl-seed2/best.pt", "distil/policy.pt", "policy.pt"):
        ours, theirs = read_policy_file(here / name).state_dict, read_policy_file(there / name).state_dict
        assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in ours), name
    card_here, card_there = (json.loads((folder / "card.json").read_text()) for folder in (here, there))
    assert card_there["regimes"] == card_here["regimes"] and card_there["ray"] == ray_address and card_here["ray"] is None
