"""The ``placer`` command line: one module per command group, each registering on :data:`placer.cli.app.app`.

    placer evaluate --cluster pacml --graphs alexnet,vgg16,resnet18,squeezenet1_0,gnmt \\
        --beta-dist A,B,C,D --load 0.9 --jobs 1000 --seeds 3 \\
        --policies para_max,para_min,fixed:4,lean --out runs/eval
    placer bound --cluster pacml --beta-dist A,B,C,D --seeds 5 --time-limit 60
    placer predict resnet50 --cluster dgx8x8 --degree 8 [--strategy auto] [--batch-size 2048]
    placer calibrate measurements.csv --cluster dgx8x8 --out calibrated.toml
    placer import pipedream ../shared/data/pipedream/vgg16.txt --out vgg16.json
    placer graphs
    placer clusters

Plug-ins add commands (``placer train`` from ``placer.policies``) through the entry-point group
``placer.cli``. User mistakes print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer
from pydantic import ValidationError
from rich.markup import escape

from placer.cli import bound, calibrate, catalog, demo, evaluate, imports, query, ray_demo, report, serve  # noqa: F401  (each registers its commands)
from placer.cli.app import app, err_console
from placer.common.errors import PlacerError, validation_message
from placer.common.pool import sigterm_as_interrupt

__all__ = ["app", "main"]


def _register_plugins() -> None:
    """Add the plug-ins' commands, then make every command's help plain text (:func:`plain_help`)."""
    for ep in entry_points(group="placer.cli"):
        try:
            register = ep.load()
        except ImportError:
            continue  # optional packages missing: the command is simply absent
        register(app)
    plain_help(app)


def plain_help(typer_app: typer.Typer) -> None:
    """Every command's help (its docstring where it gives none) without reST's double backticks: ``placer x`` -> placer
    x, as a terminal shows it; in the groups too."""
    import inspect
    import re

    for info in typer_app.registered_commands:
        text = info.help if info.help is not None else inspect.getdoc(info.callback) if info.callback else None
        if text is not None:
            info.help = re.sub(r"``(.+?)``", r"\1", text, flags=re.DOTALL)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            plain_help(group.typer_instance)


def shadowed() -> str | None:
    """A line when the module ``placer`` Python imported is not this package (a folder named placer in the current
    directory, a namespace package without placer's API, found first on the path), else None."""
    package = sys.modules.get("placer")
    if package is not None and getattr(package, "__file__", None) is not None and hasattr(package, "place"):
        return None
    where = next(iter(getattr(package, "__path__", None) or []), "the current directory")
    return (
        f"a folder named placer ({where}) shadows the installed package: 'import placer' finds it, not placer's API; "
        "run from another directory or rename the folder"
    )


def main() -> None:
    if (line := shadowed()) is not None:
        err_console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    _register_plugins()
    try:
        with sigterm_as_interrupt():  # SIGTERM ends a command as Ctrl-C does: its process pools end their workers first
            app(standalone_mode=False)
    except PlacerError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except ValidationError as exc:
        err_console.print(f"[red]error:[/red] {escape(validation_message(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(getattr(exc, "exit_code", getattr(exc, "code", 0)))
    except Exception as exc:  # click's usage errors (typer ships its own click, so match the protocol, not the class)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        exit_code = getattr(exc, "exit_code", None)
        if not (hasattr(exc, "format_message") and isinstance(exit_code, int)):
            raise
        message = " ".join(exc.format_message().split()) or "see 'placer --help'"
        command = getattr(getattr(exc, "ctx", None), "command_path", "placer")
        err_console.print(f"[red]error:[/red] {escape(message)} (see '{command} --help')", highlight=False, soft_wrap=True)
        sys.exit(exit_code)
