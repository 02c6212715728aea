"""A TOML file that extends another: tables merged key by key, other values replaced, bad chains refused in one line."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.common.errors import PlacerError
from placer.common.tomlfile import merged, read_toml


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_table_in_both_merges_and_a_list_replaces_the_base_whole(tmp_path):
    _write(tmp_path, "base.toml", 'top = 1\n[env]\nloads = [0.5, 0.9]\nmeter = true\n[env.workload]\njobs = 500\nqueue = "edf"\n')
    child = _write(tmp_path, "child.toml", 'extends = "base.toml"\n[env]\nloads = [0.5]\n[env.workload]\njobs = 10\n[train]\nseed = 3\n')
    assert read_toml(child, what="config", extends=True) == {
        "top": 1,
        "env": {"loads": [0.5], "meter": True, "workload": {"jobs": 10, "queue": "edf"}},
        "train": {"seed": 3},
    }


def test_a_chain_of_three_applies_the_nearest_last(tmp_path):
    _write(tmp_path, "a.toml", "[train]\nseed = 1\nsteps = 1\n")
    _write(tmp_path, "b.toml", 'extends = "a.toml"\n[train]\nseed = 2\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    c = _write(sub, "c.toml", 'extends = "../b.toml"\n[train]\nsteps = 3\n')  # relative to the extending file's folder
    assert read_toml(c, what="config", extends=True) == {"train": {"seed": 2, "steps": 3}}


def test_without_extends_allowed_the_key_is_left_for_validation_to_refuse(tmp_path):
    path = _write(tmp_path, "c.toml", 'extends = "base.toml"\n')
    assert read_toml(path, what="config") == {"extends": "base.toml"}


CHAIN = {"c.toml": 'extends = "d.toml"\n', "d.toml": 'extends = "e.toml"\n'}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"c.toml": 'extends = "c.toml"\n'}, "c.toml -> .*c.toml: extends goes round in a circle"),
        ({**CHAIN, "e.toml": 'extends = "c.toml"\n'}, "c.toml -> .*d.toml -> .*e.toml -> .*c.toml: extends goes round"),
        ({**CHAIN, "e.toml": 'extends = "d.toml"\n'}, "e.toml -> .*d.toml: extends goes round"),
        ({"c.toml": "extends = 3\n"}, "c.toml: extends: 3 is not a file name"),
        ({"c.toml": 'extends = ""\n'}, "c.toml: extends: '' is not a file name"),
        ({"c.toml": 'extends = "a\\u0000b.toml"\n'}, "is not a file name"),
        ({"c.toml": 'extends = "missing.toml"\n'}, "cannot read config .*missing.toml.* \\(named by extends in .*c.toml\\)"),
        ({"c.toml": 'extends = "."\n'}, "cannot read config .*named by extends in .*c.toml"),
        ({"c.toml": 'extends = "d.toml"\n', "d.toml": "[env\n"}, "d.toml: invalid TOML: .* \\(named by extends in .*c.toml\\)"),
    ],
)
def test_a_bad_chain_is_one_line_naming_the_file_at_fault(tmp_path, files, message):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(PlacerError, match=message):
        read_toml(tmp_path / "c.toml", what="config", extends=True)


def test_a_loop_of_symbolic_links_is_one_line(tmp_path):
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    (tmp_path / "b.toml").symlink_to(tmp_path / "a.toml")
    _write(tmp_path, "c.toml", 'extends = "a.toml"\n')
    with pytest.raises(PlacerError, match="cannot read config .*a.toml"):
        read_toml(tmp_path / "c.toml", what="config", extends=True)


def test_a_linked_config_extends_relative_to_the_file_it_links_to(tmp_path):
    shipped, elsewhere = tmp_path / "shipped", tmp_path / "elsewhere"
    shipped.mkdir()
    elsewhere.mkdir()
    _write(shipped, "base.toml", "[train]\nseed = 1\n")
    _write(shipped, "child.toml", 'extends = "base.toml"\n[train]\nsteps = 2\n')
    (elsewhere / "mine.toml").symlink_to(shipped / "child.toml")
    assert read_toml(elsewhere / "mine.toml", what="config", extends=True) == {"train": {"seed": 1, "steps": 2}}


def test_a_bad_value_in_a_base_names_the_chain(tmp_path):
    from placer.policies.config import load_train_config

    _write(tmp_path, "base.toml", '[env]\nclusters = ["dgx8x8"]\n[ppo]\nn_envs = 0\n')
    child = _write(tmp_path, "child.toml", 'extends = "base.toml"\n[train]\nseed = 5\n')
    with pytest.raises(PlacerError, match=r"child.toml \(extends .*base.toml\): ppo.n_envs: Input should be greater"):
        load_train_config(child)


def test_a_shipped_config_that_extends_loads_as_its_base_with_its_own_keys():
    from placer.policies.config import load_train_config

    configs = Path(__file__).parents[3] / "experiments" / "configs"
    base, child = load_train_config(configs / "blend.toml"), load_train_config(configs / "blend-margin.toml")
    assert (base.train.teacher_margin, child.train.teacher_margin) == (0.0, 0.1)
    assert child.model_copy(update={"train": base.train}) == base


values = st.integers() | st.lists(st.integers(), max_size=2)
tables = st.recursive(values, lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3))
dicts = st.dictionaries(st.sampled_from("abc"), tables, max_size=3)


@given(dicts, dicts)
def test_merging_keeps_every_key_and_the_overrides_non_table_values(base, override):
    out = merged(base, override)
    assert set(out) == set(base) | set(override)
    for key, value in override.items():
        if not (isinstance(value, dict) and isinstance(base.get(key), dict)):
            assert out[key] == value
    assert merged(out, {}) == out and merged({}, override) == override


def test_merging_shares_no_table_with_its_inputs():
    base, override = {"x": {"y": 1}}, {"z": {"w": [2]}}
    out = merged(base, override)
    out["x"]["y"], out["z"]["w"][0] = 5, 6
    assert (base, override) == ({"x": {"y": 1}}, {"z": {"w": [2]}})
