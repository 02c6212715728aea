"""The typer application every command registers on, its consoles and shared helpers."""

from __future__ import annotations

from typing import Annotated

import typer
import typer.core
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def _flag_type_rich(self: typer.core.TyperOption, ctx) -> str | None:
    """No type column for on/off flags (typer 0.29's rich help prints ``<bool>`` beside them)."""
    return None if self.is_flag or _option_type_rich is None else _option_type_rich(self, ctx)


_option_type_rich = getattr(typer.core.TyperOption, "display_type_rich", None)  # typers before it print no type column
if _option_type_rich is not None:
    typer.core.TyperOption.display_type_rich = _flag_type_rich  # type: ignore[method-assign]  # a deliberate patch of typer

app = typer.Typer(add_completion=False, help="Partition and place DNN training jobs on a GPU cluster.")
import_app = typer.Typer(
    no_args_is_help=True,
    help="Import job graphs (PipeDream, PyTorch) and public cluster traces (Gavel, Philly, Helios, ...) from other formats.",
)
app.add_typer(import_app, name="import")
# emoji off: a user's ``:100:`` or ``:ok:`` (policy options, paths) is quoted back as typed, not as a picture
console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"placer {version('placer')}")
        except PackageNotFoundError:
            typer.echo("placer (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Partition and place DNN training jobs on a GPU cluster."""


def warn(message: str, label: str = "warning") -> None:
    """``warning: MESSAGE`` (or another ``label``) on stderr as one line: output that runs but means less than it seems."""
    from rich.markup import escape

    err_console.print(f"[yellow]{label}:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
        disable=not err_console.is_terminal,
    )
