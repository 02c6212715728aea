"""The training configs shipped in data/configs load, and name teachers and baselines that exist."""

from pathlib import Path

import pytest

from placer.baselines.registry import make_heuristic
from policies.config import load_train_config

CONFIGS = sorted((Path(__file__).parents[2] / "data" / "configs").glob("*.toml"))


def test_the_shipped_configs_are_found():
    assert {p.stem for p in CONFIGS} >= {"pacml", "quick", "hindsight"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_shipped_config_loads_and_its_policies_exist(path):
    train = load_train_config(path).train
    for spec in (train.imitation_teacher, *train.baselines):
        make_heuristic(spec)
