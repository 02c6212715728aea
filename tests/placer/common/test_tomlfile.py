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


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"c.toml": 'extends = "c.toml"\n'}, "extends itself"),
        ({"c.toml": 'extends = "d.toml"\n', "d.toml": 'extends = "c.toml"\n'}, "extends itself"),
        ({"c.toml": "extends = 3\n"}, "3 is not a file name"),
        ({"c.toml": 'extends = "missing.toml"\n'}, "missing.toml"),
        ({"c.toml": 'extends = "d.toml"\n', "d.toml": "[env\n"}, "d.toml: invalid TOML"),
    ],
)
def test_a_bad_chain_is_one_line(tmp_path, files, message):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(PlacerError, match=message):
        read_toml(tmp_path / "c.toml", what="config", extends=True)


def test_a_shipped_config_that_extends_loads_as_its_base_with_its_own_keys():
    from policies.config import load_train_config

    configs = Path(__file__).parents[3] / "data" / "configs"
    base, child = load_train_config(configs / "blend.toml"), load_train_config(configs / "blend-margin.toml")
    assert (base.train.teacher_margin, child.train.teacher_margin) == (0.0, 0.1)
    assert child.model_copy(update={"train": base.train}) == base


tables = st.recursive(st.integers() | st.lists(st.integers(), max_size=2), lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3))
dicts = st.dictionaries(st.sampled_from("abc"), tables, max_size=3)


@given(dicts, dicts)
def test_merging_keeps_every_key_and_the_overrides_non_table_values(base, override):
    out = merged(base, override)
    assert set(out) == set(base) | set(override)
    for key, value in override.items():
        if not (isinstance(value, dict) and isinstance(base.get(key), dict)):
            assert out[key] == value
    assert merged(out, {}) == out and merged({}, override) == override
