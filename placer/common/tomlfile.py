"""Read a TOML file into a pydantic model, turning every failure into one clear error line."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from placer.common.errors import PlacerError
from placer.common.textfile import read_text

Model = TypeVar("Model", bound=BaseModel)


def validate(model: type[Model], data: object, *, source: str, error: type[PlacerError] = PlacerError) -> Model:
    """``model`` from ``data``; the first validation problem becomes ``error("SOURCE: FIELD: message")``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        raise error(f"{source}: {where}: {first['msg']}") from None


def load_toml(path: Path, model: type[Model], *, what: str, error: type[PlacerError] = PlacerError) -> Model:
    """Read and validate ``path``; ``what`` names the file's role in error messages."""
    text = read_text(path, what=what, error=error)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    return validate(model, data, source=str(path), error=error)
