"""Tables printed three ways: markdown (for notes and READMEs), CSV (for scripts), or a terminal table
that keeps every policy name whole and fits the terminal's width."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from enum import StrEnum

import typer
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


class TableFormat(StrEnum):
    markdown = "markdown"
    csv = "csv"
    table = "table"


def say(text: str, fmt: TableFormat) -> None:
    """A line around the tables: on stdout, or on stderr where stdout carries CSV for a script."""
    typer.echo(text, err=fmt == TableFormat.csv)


def emit_by_beta(
    rows: list[list[str]], betas: Sequence[str], values: list[str], fmt: TableFormat, *, bold: AbstractSet[tuple[int, int]] = frozenset()
) -> None:
    """Print one row per policy: its name, then ``values`` for each of ``betas`` in turn.

    Markdown and CSV get one wide row per policy ("beta A blocking", ...); a terminal table
    stacks the betas into rows (beta, policy, values), so it stays narrow however many there are.
    ``bold`` (row, column) cells are the best of their column.
    """
    per = len(values)
    if fmt != TableFormat.table:
        emit(["policy", *(f"beta {b} {v}" for b in betas for v in values)], rows, fmt, bold=bold)
        return
    stacked: list[list[str]] = []
    stacked_bold: set[tuple[int, int]] = set()
    for g, beta in enumerate(betas):
        for i, row in enumerate(rows):
            stacked_bold |= {(len(stacked), 2 + k) for k in range(per) if (i, 1 + g * per + k) in bold}
            stacked.append([beta, row[0], *row[1 + g * per : 1 + (g + 1) * per]])
    emit(["beta", "policy", *values], stacked, fmt, bold=stacked_bold)


def emit(header: list[str], rows: list[list[str]], fmt: TableFormat, *, bold: AbstractSet[tuple[int, int]] = frozenset()) -> None:
    """Print ``rows`` under ``header``; ``bold`` (row, column) cells are the best of their column."""
    if fmt == TableFormat.csv:
        header, rows = _numeric(header, rows)
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header, *rows])
        typer.echo(out.getvalue(), nl=False)
    elif fmt == TableFormat.markdown:
        typer.echo("| " + " | ".join(header) + " |")
        typer.echo("|---|" + "---:|" * (len(header) - 1))
        for i, row in enumerate(rows):
            cells = [f"**{c}**" if (i, j) in bold else c for j, c in enumerate(row)]
            typer.echo("| " + " | ".join(cells) + " |")
    else:
        Console(emoji=False).print(terminal_table(header, rows, bold=bold))


WHOLE = ("beta", "policy", "graph", "cluster")  # text columns whose names are never wrapped or cut


def terminal_table(
    header: list[str],
    rows: list[list[str]],
    *,
    title: str | None = None,
    bold: AbstractSet[tuple[int, int]] = frozenset(),
    width: int | None = None,
) -> Table:
    """A rich table whose text columns (:data:`WHOLE`) never wrap or cut. Where it is wider than ``width`` (default: the
    terminal's) on one line a row, each ``mean ± half`` cell puts its ``± half`` on a second line, so that no number
    falls under the next column; the numbers wrap only if even that does not fit."""
    table = _table(header, rows, title, bold)
    if _natural_width(table) > (width or Console(emoji=False).width):
        table = _table(header, [[c.replace(" ± ", "\n± ") for c in row] for row in rows], title, bold)
    return table


def _table(header: list[str], rows: list[list[str]], title: str | None, bold: AbstractSet[tuple[int, int]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    for name in header:
        text = name in WHOLE
        table.add_column(name, no_wrap=text, justify="left" if text else "right", overflow="fold")
    for i, row in enumerate(rows):
        table.add_row(*(f"[bold green]{c}[/]" if (i, j) in bold else c for j, c in enumerate(row)))
    return table


def _natural_width(table: Table) -> int:
    """The width ``table`` takes with every cell on one line."""
    wide = Console(width=10_000, emoji=False)
    return Measurement.get(wide, wide.options, table).maximum


def _numeric(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """CSV for scripts: a "mean ± half" column becomes two, "H" and "H ci95" (empty where undefined)."""
    split = [bool(rows) and all(" ± " in row[j] for row in rows) for j in range(len(header))]
    new_header = [name for j, name in enumerate(header) for name in ((name, f"{name} ci95") if split[j] else (name,))]
    new_rows = []
    for row in rows:
        cells = []
        for j, cell in enumerate(row):
            if split[j]:
                mean, half = cell.split(" ± ", 1)
                cells += [mean, "" if half.startswith("n/a") else half]
            else:
                cells.append(cell)
        new_rows.append(cells)
    return new_header, new_rows
