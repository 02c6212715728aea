"""Command-line options made from a config model's fields, so that each option is written once (in the model).

:func:`model_options` gives a command one ``--option`` per field of a pydantic model, with the field's
description as help and its default (or the command's own); the command receives the values as one dict.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from placer.cli.app import split_list
from placer.common.errors import UsageError

FirstSeed = Annotated[int, typer.Option(help="the first stream seed: seeds S, S+1, ... (streams apart from another run's)")]
# Input files are checked when the command line is parsed, before anything is imported or loaded: a missing one is one line
INPUT_FILE = {"exists": True, "dir_okay": False, "readable": True}
INPUT_FOLDER = {"exists": True, "file_okay": False, "readable": True}


def checked_cluster(value: str) -> str:
    """``--cluster``'s callback: a preset or a readable, valid cluster file, else one line now (not after the imports)."""
    from placer.cluster.topology import load_cluster

    load_cluster(value)  # a few TOML lines: cheap, and its errors are the ones loading it later would give
    return value


def checked_out_folder(value: Path) -> Path:
    """``--out``'s callback: a folder, or a path where one can be made (nothing on it, or above it, is a file), else one
    line now, before any run whose results it would hold."""
    from placer.common.errors import OutputError

    for path in (value, *value.parents):
        if path.exists() and not path.is_dir():
            what = "is a file" if path == value else f"is under {str(path)!r}, a file"
            raise OutputError(f"--out {str(value)!r} {what}, not a folder")
    return value


OutFolder = Annotated[Path, typer.Option(help="output folder", callback=checked_out_folder)]


def check_distinct_betas(specs: Sequence[str]) -> None:
    """``--beta-dist`` names each distribution once (a repeat would be another column of the same distribution, its
    streams pooled with the first's as if more seeds), or a one-line error."""
    from placer.workloads.generator import BetaDistribution

    seen: dict[tuple, str] = {}
    for spec in specs:
        parsed = BetaDistribution(spec).parsed
        if parsed in seen:
            first = seen[parsed]
            same = f"{spec!r} is given twice" if first == spec else f"{first!r} and {spec!r} are one distribution"
            raise UsageError(f"beta distributions must be distinct: {same}")
        seen[parsed] = spec


def check_seed_range(first_seed: int, seeds: int) -> None:
    """``--first-seed`` and ``--seeds`` name seeds below a training's validation streams, or a one-line error."""
    from placer.evaluate.config import VALIDATION_SEED

    if first_seed < 0 or first_seed + seeds > VALIDATION_SEED:
        raise UsageError(f"--first-seed: seeds 0 to {VALIDATION_SEED - 1:,} (from {VALIDATION_SEED:,}: a training's validation streams)")


def model_options(
    model: type[BaseModel],
    into: str,
    *,
    defaults: dict[str, Any] | None = None,
    names: dict[str, str] | None = None,
    exclude: tuple[str, ...] = (),
    include: tuple[str, ...] | None = None,
    units: Mapping[str, tuple[str, float]] | None = None,
    bounded: bool = False,
) -> Callable[[Callable], Callable]:
    """Decorate a command so that it takes one option per field of ``model`` and gets them as the dict ``into``.

    ``defaults``: the command's own defaults (else the model's); ``names``: option names other than
    ``--field-name`` (``{"beta_dists": "--beta-dist"}``); ``exclude``: fields that get no option, ``include``: the only
    fields that get one (default: all); ``units``: fields given in another unit on the command line, as (unit, its size in
    the field's: ``{"cache_bytes": ("MiB", 2**20)}``), the default and bounds converted, the value converted back;
    ``bounded``: the options take the fields' bounds too (:func:`option_bounds`).
    Tuple fields are comma-separated on the command line. Options left at None are left out of the dict.
    """
    defaults, names, units = defaults or {}, names or {}, units or {}
    fields = {name: field for name, field in model.model_fields.items() if name not in exclude and (include is None or name in include)}

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != into]
        added = []
        for name, field in fields.items():
            listed = _is_tuple(field.annotation)
            unit, size = units.get(name, ("", 1))
            default = defaults.get(name, field.default)
            default = ",".join(default) if listed and isinstance(default, tuple | list) else default
            default = float(default) / size if unit and default is not None else default
            kind = str if listed else float if unit else _scalar(field.annotation)
            help_ = (field.description or "") + (f", in {unit}" if unit else "")
            option = typer.Option(
                names.get(name, "--" + name.replace("_", "-")), help=help_, **(option_bounds(field, size) if bounded else {})
            )
            added.append(
                inspect.Parameter(f"{into}_{name}", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, option])
            )

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(f"{into}_{name}") for name in fields}
            values = {name: split_list(v) if _is_tuple(fields[name].annotation) else v for name, v in values.items() if v is not None}
            for name, (_, size) in units.items():
                if name in values:
                    values[name] = _plain(fields[name].annotation)(values[name] * size)
            return command(*args, **kwargs, **{into: values})

        run.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
        return run

    return decorate


def option_bounds(field: FieldInfo, size: float = 1) -> dict[str, Any]:
    """The ``typer.Option`` arguments that bound an option as ``field`` is bounded (in units of ``size`` of the field's):
    ``ge``/``le`` as ``min``/``max``, ``gt``/``lt`` (which typer cannot state) as a callback refusing the bound itself."""
    bounds: dict[str, Any] = {}
    above = below = None
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            bounds["min"] = _scaled(item.ge, size)
        elif isinstance(item, annotated_types.Le):
            bounds["max"] = _scaled(item.le, size)
        elif isinstance(item, annotated_types.Gt):
            above = float(_scaled(item.gt, size))
        elif isinstance(item, annotated_types.Lt):
            below = float(_scaled(item.lt, size))
    if above is not None or below is not None:
        bounds["callback"] = open_bounds(above, below)
    return bounds


def _scaled(bound: Any, size: float) -> Any:
    """A field's bound in units of ``size`` of the field's (itself, an int kept int, in the field's own units)."""
    return bound if size == 1 else bound / size


def open_bounds(above: float | None, below: float | None) -> Callable[[Any], Any]:
    """An option's callback: its value if above ``above`` and below ``below`` (each None: unbounded), else typer's one line."""

    def check(value: Any) -> Any:
        if value is not None and ((above is not None and not value > above) or (below is not None and not value < below)):
            ranges = [f"x>{above:g}"] if above is not None else []
            ranges += [f"x<{below:g}"] if below is not None else []
            raise typer.BadParameter(f"{value} is not in the range {' and '.join(ranges)}.")
        return value

    check.above, check.below = above, below  # type: ignore[attr-defined]  # (what the tests compare with the model)
    return check


def _is_tuple(annotation: Any) -> bool:
    annotation = _plain(annotation)
    return typing.get_origin(annotation) is tuple or annotation is tuple


def _scalar(annotation: Any) -> Any:
    """The type typer parses an option of a scalar field as (``int | None`` -> ``int | None``, ``Literal[...]`` -> ``str``)."""
    annotation = _plain(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return str
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _scalar(inner[0]) | None
    return annotation


def _plain(annotation: Any) -> Any:
    """``Annotated[X, ...]`` -> ``X``."""
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is Annotated else annotation


def evaluation_option(name: str, help: str) -> Any:
    """The ``typer.Option`` of :class:`~placer.evaluate.config.EvaluationConfig`'s field ``name`` (its bounds; its default
    is :func:`evaluation_default`'s), so that the commands that build one (evaluate, bound) state it once."""
    from placer.evaluate.config import EvaluationConfig

    return typer.Option(help=help, **option_bounds(EvaluationConfig.model_fields[name]))


def evaluation_default(name: str) -> Any:
    """:class:`~placer.evaluate.config.EvaluationConfig`'s default of field ``name``."""
    from placer.evaluate.config import EvaluationConfig

    return EvaluationConfig.model_fields[name].default
