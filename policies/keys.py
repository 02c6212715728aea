"""Every key a training config or recipe may set, with its default and meaning, from the models that parse them
(``placer train --keys`` prints :func:`keys_as_toml`): the descriptions live on the fields, so this list cannot fall behind them."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from placer.envs.config import EnvConfig
from placer.policies.config import PolicySection, PPOSection, TrainSection
from placer.policies.recipe import RecipeSection
from placer.sim.workload import WorkloadSpec

TABLES: tuple[tuple[str, type[BaseModel]], ...] = (
    ("env", EnvConfig),
    ("env.workload", WorkloadSpec),
    ("ppo", PPOSection),
    ("policy", PolicySection),
    ("train", TrainSection),
    ("recipe", RecipeSection),
)


class Key(NamedTuple):
    table: str  # the TOML table it goes in, e.g. "train"; "" for the top level
    name: str
    default: str  # as TOML would write it; "none" where it has none
    description: str


# the one top-level key (placer.common.tomlfile): read before the models see the file
EXTENDS = Key("", "extends", '"base.toml"', "a config whose tables this file's are merged into (a list is replaced whole)")


def config_keys() -> list[Key]:
    """Every key of :data:`TABLES`, table by table in the models' field order (a table's sub-table is its own table)."""
    keys = []
    for table, model in TABLES:
        for name, field in model.model_fields.items():
            if isinstance(field.default, BaseModel):
                continue  # a sub-table ([env.workload]): listed as its own table
            keys.append(Key(table, name, _toml(field.default), field.description or ""))
    return keys


def _toml(value: Any) -> str:
    """``value`` as a TOML value is written (``none`` for None or no default)."""
    if value is None or value is PydanticUndefined:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value) if isinstance(value, str | list | dict) else repr(value)


def keys_as_toml() -> str:
    """Every key of :func:`config_keys` as a TOML file of the defaults, its meaning in a comment beside it; a
    key without a default (TOML has no null) and ``extends`` commented out. Plain text: nothing is cut at any width."""
    lines, table = [f"# {EXTENDS.name} = {EXTENDS.default}  # {EXTENDS.description}"], None
    for key in config_keys():
        if key.table != table:
            table = key.table
            lines += ["", f"[{table}]"]
        line = f"{key.name} = {key.default}  # {key.description}"
        lines.append(f"# {line}" if key.default == "none" else line)
    return "\n".join(lines)
