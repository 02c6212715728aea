"""``python -m tools.figures``: every table and plot of the README, ``docs/`` and the experiments' log from the result files beside it.

    python -m tools.figures [NAME ...]           # re-render the blocks and plots from each figure's results folder
    python -m tools.figures [NAME ...] --check   # exit 1 listing the stale figures (presets changed, block differs)
    python -m tools.figures [NAME ...] --run     # rerun the recorded commands, keep their result files, re-render

Each figure's results folder is ``docs/results/NAME/``, or ``experiments/results/NAME/`` for a figure only
``experiments/*.md`` shows (:func:`tools.figures.core.results_dir`). The registry of figures is
:mod:`tools.figures.registry`; the rules are in :mod:`tools.figures.core`. A tool of the repository, run from its
root: it is not installed with placer (pyproject's packages leave ``tools`` out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tools.figures import core
from tools.figures.core import FigureError

app = typer.Typer(add_completion=False, no_args_is_help=False)
err_console = Console(stderr=True)


def repo_root() -> Path:
    """The checkout whose README and docs/ hold the figures (the parent of ``tools/``)."""
    return Path(__file__).resolve().parents[2]


def select(figures: list[core.Figure], names: list[str]) -> list[core.Figure]:
    """The figures named (all when none), in registry order; an unknown name is a one-line error."""
    known = {figure.name for figure in figures}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise FigureError(f"unknown figure {', '.join(map(repr, unknown))} (figures: {', '.join(sorted(known))})")
    return [figure for figure in figures if not names or figure.name in names]


def stale(root: Path, figures: list[core.Figure]) -> dict[str, list[str]]:
    """Figure name -> why it is stale, for the stale ones."""
    found = {figure.name: core.problems(root, figure) for figure in figures}
    return {name: why for name, why in found.items() if why}


@app.command()
def figures(
    names: Annotated[list[str] | None, typer.Argument(help="figures to handle (default: all)", show_default=False)] = None,
    check: Annotated[bool, typer.Option("--check", help="only check: exit 1 listing stale figures")] = False,
    rerun: Annotated[bool, typer.Option("--run", help="rerun the recorded commands to refresh the result files first")] = False,
    collect: Annotated[
        bool, typer.Option("--collect", hidden=True, help="keep the result files the commands wrote before (no rerun)")
    ] = False,
    commit: Annotated[str | None, typer.Option("--commit", hidden=True, help="with --collect: the commit whose code wrote them")] = None,
) -> None:
    """Render every figure (table or plot) of the README and docs/ from its result files in docs/results/NAME/
    (experiments/results/NAME/ for the experiments' log's).

    Each result folder records the commands that made it, the commit and a fingerprint of the cluster
    presets it used; --check fails when a preset changed since, or a block no longer matches its results.
    """
    from tools.figures.registry import FIGURES

    root = repo_root()
    if not (root / "docs").is_dir():
        raise FigureError(f"python -m tools.figures works in a source checkout (no docs/ beside tools/ at {root})")
    chosen = select(list(FIGURES), names or [])
    if check:
        found = stale(root, chosen)
        for name, why in found.items():
            for reason in why:
                typer.echo(f"{name}: {reason}")
        if found:
            raise typer.Exit(1)
        typer.echo(f"{len(chosen)} figures current")
        return
    for figure in chosen:
        if rerun or collect:
            err_console.print(f"{figure.name}: {'collecting' if collect else 'running'} {len(figure.steps)} command(s)")
            core.run(root, figure, execute=not collect, commit=commit)
        changed = core.render(root, figure)
        typer.echo(f"{figure.name}: {'rendered' if changed else 'unchanged'} ({figure.document})")
