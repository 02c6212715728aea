"""Read a TOML file into a pydantic model, turning every failure into one clear error line.

With ``extends`` allowed, a file may start with ``extends = "other.toml"`` (a path relative to the file's folder): it is
that file's tables with its own merged in (:func:`merged`), so that a config that varies one setting of another says only
that setting."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from placer.common.errors import PlacerError
from placer.common.textfile import read_text

Model = TypeVar("Model", bound=BaseModel)
EXTENDS = "extends"  # the key naming the file a TOML file extends


def validate(model: type[Model], data: object, *, source: str, error: type[PlacerError] = PlacerError) -> Model:
    """``model`` from ``data``; the first validation problem becomes ``error("SOURCE: FIELD: message")``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        raise error(f"{source}: {where}: {first['msg']}") from None


def load_toml(path: Path, model: type[Model], *, what: str, error: type[PlacerError] = PlacerError, extends: bool = False) -> Model:
    """Read and validate ``path``; ``what`` names the file's role in error messages; ``extends``: the file may extend
    another (module docstring)."""
    return validate(model, read_toml(path, what=what, error=error, extends=extends), source=str(path), error=error)


def read_toml(path: Path, *, what: str, error: type[PlacerError] = PlacerError, extends: bool = False) -> dict[str, Any]:
    """The tables of ``path``; with ``extends``, those of the files it extends (each at most once in the chain) with its own
    merged in."""
    chain: list[Path] = []
    data = _parsed(path, what, error)
    while extends and EXTENDS in data:
        base = data.pop(EXTENDS)
        if not isinstance(base, str):
            raise error(f"{path}: {EXTENDS}: {base!r} is not a file name (a TOML file, relative to this one's folder)")
        chain.append(path.resolve())
        path = path.parent / base
        if path.resolve() in chain:
            raise error(f"{chain[0]}: {EXTENDS}: {path} extends itself (a file in the chain returns)")
        data = merged(_parsed(path, what, error), data)
    return data


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``override``'s keys: a table in both is merged the same way, key by key; any other value (a list
    included) replaces the base's whole."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _parsed(path: Path, what: str, error: type[PlacerError]) -> dict[str, Any]:
    text = read_text(path, what=what, error=error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
