"""``placer train --keys``: every key a training config or recipe may set, with its default and meaning."""

import os
import subprocess
import sys
import tomllib

from placer.common.shipped import data_dir
from placer.common.tomlfile import read_toml
from placer.policies.keys import TABLES, config_keys


def test_every_key_has_a_meaning_and_a_default_a_toml_file_can_write():
    keys = config_keys()
    assert [k for k in keys if not k.description] == []
    for key in keys:
        if key.default != "none":  # TOML has no null: such a key is left out to keep its default
            assert tomllib.loads(f"[{key.table}]\n{key.name} = {key.default}\n")[key.table.split(".")[0]]
    assert ("train", "teacher_resolved", "false") in {(k.table, k.name, k.default) for k in keys}


def test_every_key_the_shipped_configs_set_is_listed():
    listed = {(k.table, k.name) for k in config_keys()}
    tables = dict(TABLES)
    for path in sorted((data_dir() / "configs").glob("*.toml")):
        data = read_toml(path, what="config", extends=True)
        used = {(t, name) for t in ("env", "ppo", "policy", "train", "recipe") for name in data.get(t, {}) if t in tables}
        used |= {("env.workload", name) for name in data.get("env", {}).get("workload", {})}
        stage_tables = {
            (t, name) for stage in ("clone", "rl", "distil") for t, v in data.get("recipe", {}).get(stage, {}).items() for name in v
        }
        nested = {("env", "workload"), ("recipe", "clone"), ("recipe", "rl"), ("recipe", "distil")}
        assert (used | stage_tables) - nested <= listed, path.name


def test_placer_train_lists_the_keys_as_a_toml_file_of_the_defaults_and_takes_no_other_option():
    listing = subprocess.run(
        [sys.executable, "-m", "placer", "train", "--keys"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "40"},
    )
    assert listing.returncode == 0, listing.stderr
    defaults = tomllib.loads(listing.stdout)  # piped and narrow: nothing cut, and it reads back as a config's defaults
    for key in config_keys():
        table = defaults
        for part in key.table.split("."):
            table = table.get(part, {})
        if key.default != "none":
            assert table[key.name] == tomllib.loads(f"v = {key.default}")["v"], key
        assert f"{key.name} = {key.default}  # {key.description}" in listing.stdout
    assert "# extends = " in listing.stdout and defaults["train"]["teacher_resolved"] is False
    mixed = subprocess.run(
        [sys.executable, "-m", "placer", "train", "--keys", "--config", "x.toml"], capture_output=True, text=True, timeout=120
    )
    assert mixed.returncode != 0 and "takes no other option" in mixed.stderr and not mixed.stdout
    bare = subprocess.run([sys.executable, "-m", "placer", "train", "--out", "x"], capture_output=True, text=True, timeout=120)
    assert bare.returncode != 0 and "needs --config and --out" in bare.stderr and "Traceback" not in bare.stderr
