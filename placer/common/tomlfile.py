"""Read a TOML file into a pydantic model, turning every failure into one clear error line.

With ``extends`` allowed, a file whose top level has ``extends = "other.toml"`` (absolute, or relative to the folder of
the file that names it, symbolic links followed) is that file's tables with its own merged in (:func:`merged`), so that a
config that varies one setting of another says only that setting. Only the top-level key counts (under a table it is an
ordinary key); a chain of such files may not return to a file; every error names the file at fault or the chain.
"""

from __future__ import annotations

import copy
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
    another (module docstring), and a validation error then names the chain (``c.toml (extends b.toml, a.toml)``)."""
    data, chain = _read_chain(path, what, error, extends)
    source = str(path) + (f" (extends {', '.join(str(p) for p in chain[1:])})" if len(chain) > 1 else "")
    return validate(model, data, source=source, error=error)


def read_toml(path: Path, *, what: str, error: type[PlacerError] = PlacerError, extends: bool = False) -> dict[str, Any]:
    """The tables of ``path``; with ``extends``, those of the files it extends with its own merged in (module docstring)."""
    return _read_chain(path, what, error, extends)[0]


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """A new table: ``base`` with ``override``'s keys. A table in both is merged the same way, key by key; any other value
    (a list included) replaces the base's whole. Neither input is changed, and the result shares no table with them."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else copy.deepcopy(value)
    return out


def _read_chain(path: Path, what: str, error: type[PlacerError], extends: bool) -> tuple[dict[str, Any], list[Path]]:
    """The merged tables of ``path`` and the files they came from, ``path`` first."""
    chain = [path]
    data = _parsed(path, what, error)
    while extends and EXTENDS in data:
        name = data.pop(EXTENDS)
        here = chain[-1]
        if not isinstance(name, str) or not name or "\0" in name:
            raise error(f"{here}: {EXTENDS}: {name!r} is not a file name (a TOML file, relative to this one's folder)")
        base = _real(here, what, error).parent / name
        if _real(base, what, error) in [_real(p, what, error) for p in chain]:
            raise error(f"{' -> '.join(map(str, [*chain, base]))}: {EXTENDS} goes round in a circle")
        try:
            data = merged(_parsed(base, what, error), data)
        except PlacerError as exc:
            raise error(f"{exc} (named by {EXTENDS} in {here})") from None
        chain.append(base)
    return data, chain


def _real(path: Path, what: str, error: type[PlacerError]) -> Path:
    """``path`` with every symbolic link followed; one line for a loop of links."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a loop of symbolic links (Python < 3.13)
        raise error(f"cannot read {what} {str(path)!r}: {exc}") from None


def _parsed(path: Path, what: str, error: type[PlacerError]) -> dict[str, Any]:
    text = read_text(path, what=what, error=error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
