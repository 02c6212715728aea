"""The training configs shipped in data/configs load, and name teachers and baselines that exist."""

from pathlib import Path

import pytest

from placer.baselines.registry import make_heuristic
from placer.policies.config import load_train_config
from placer.policies.recipe import is_recipe, load_recipe

CONFIGS = sorted((Path(__file__).parents[2] / "data" / "configs").glob("*.toml"))


def test_the_shipped_configs_are_found():
    assert {p.stem for p in CONFIGS} == {"pacml", "quick", "placer"}  # the recipe, its quick form, PAC-ML's; experiments/ the rest


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_shipped_config_loads_and_its_policies_exist(path, tmp_path):
    configs = [s.config for s in load_recipe(path, tmp_path).stages] if is_recipe(path) else [load_train_config(path)]
    for config in configs:
        for spec in (config.train.imitation_teacher, *config.train.baselines):
            make_heuristic(spec)


def test_a_recipe_is_refused_as_a_single_run_in_one_line():
    from placer.common.errors import PlacerError

    with pytest.raises(PlacerError, match=r"\[recipe\].*placer.policies.recipe"):
        load_train_config(Path(__file__).parents[2] / "data" / "configs" / "placer.toml")


@pytest.mark.parametrize(
    ("line", "absurd", "message"),
    [("hidden = 64", "hidden = 10000000", "policy.hidden"), ("max_nodes = 512", "max_nodes = 1000000000", "env.max_nodes")],
)
def test_absurd_sizes_in_a_config_are_one_line_not_an_allocation(tmp_path, line, absurd, message):
    from placer.common.errors import PlacerError

    text = (Path(__file__).parents[2] / "data" / "configs" / "pacml.toml").read_text()
    assert line in text
    (tmp_path / "c.toml").write_text(text.replace(line, absurd))
    with pytest.raises(PlacerError, match=f"{message}: Input should be less than or equal to"):
        load_train_config(tmp_path / "c.toml")
