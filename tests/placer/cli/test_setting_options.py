"""One way to state a setting (issue 80, item B): ``placer serve``'s options take their defaults and bounds from
:class:`~placer.serve.settings.ServiceSettings`, never restated by hand."""

from __future__ import annotations

import inspect
import typing

import annotated_types
import pytest

from placer.cli import serve as serve_cli
from placer.serve.settings import ServiceSettings


def serve_options() -> dict[str, tuple[object, typing.Any]]:
    """``placer serve``'s parameters: name -> (default, typer's OptionInfo)."""
    found = {}
    for name, parameter in inspect.signature(serve_cli.serve).parameters.items():
        info = next(a for a in typing.get_args(parameter.annotation)[1:]) if typing.get_origin(parameter.annotation) else None
        found[name] = (parameter.default, info)
    return found


def model_bounds(field) -> dict[str, float]:
    kinds = {annotated_types.Ge: "ge", annotated_types.Le: "le", annotated_types.Gt: "gt", annotated_types.Lt: "lt"}
    return {kinds[type(m)]: getattr(m, kinds[type(m)]) for m in field.metadata if type(m) in kinds}


def test_every_serve_option_of_a_setting_has_the_models_default_and_bounds():
    options = serve_options()
    checked = []
    for name, field in ServiceSettings.model_fields.items():
        if f"limits_{name}" not in options:
            continue
        default, info = options[f"limits_{name}"]
        size = serve_cli.SETTINGS_UNITS.get(name, ("", 1))[1]
        assert default * size == field.default, name
        bounds = model_bounds(field)
        stated = {"ge": info.min, "le": info.max}
        check = info.callback
        stated |= {"gt": getattr(check, "above", None), "lt": getattr(check, "below", None)}
        assert {k: v * size for k, v in stated.items() if v is not None} == pytest.approx(bounds), name
        assert info.help.startswith(field.description), name
        checked.append(name)
    assert sorted(checked) == sorted(serve_cli.SETTINGS_OPTIONS)


def test_no_serve_option_restates_a_setting_by_hand():
    fields = set(ServiceSettings.model_fields) | {n.lstrip("-").replace("-", "_") for n in serve_cli.SETTINGS_NAMES.values()}
    own = {name for name in serve_options() if not name.startswith("limits_")}
    # --reset-state (a flag) and --tenants (the file the tenants are read from): no default or bound of the model's to restate
    assert own & fields == {"reset_state", "tenants"}
    for name in own & fields:
        assert serve_options()[name][0] == ServiceSettings.model_fields[name].default, name


def test_an_open_bound_is_refused_in_one_line():
    from typer.testing import CliRunner

    from placer.cli.app import app

    result = CliRunner().invoke(app, ["serve", "--memory-only", "--cache-mb", "0"])
    assert result.exit_code == 2 and "Invalid value for '--cache-mb'" in result.output and "x>0" in result.output


@pytest.mark.parametrize("command", ["evaluate", "bound"])
def test_evaluation_options_take_the_configs_defaults_and_bounds(command):
    # max_degree, strategy and first_seed are EvaluationConfig's: the commands that build one state none of them again
    import inspect

    from placer.cli import bound, evaluate
    from placer.evaluate.config import EvaluationConfig

    function = {"evaluate": evaluate.evaluate, "bound": bound.bound}[command]
    parameters = inspect.signature(function).parameters
    for name in ("max_degree", "strategy", "first_seed"):
        assert parameters[name].default == EvaluationConfig.model_fields[name].default, name
