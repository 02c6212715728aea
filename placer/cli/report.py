"""``placer report``: an evaluation's summary as markdown, paired differences and planner deviations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from placer.cli.app import app, err_console, warn
from placer.cli.report_tables import (
    blocking_table,
    chosen_table,
    deviations_table,
    gap_table,
    jobs_table,
    members_table,
    outcomes_table,
    overrides_table,
    paired_table,
    samples_of,
    tuned_table,
)
from placer.cli.tables import TableFormat, say
from placer.common.atomic import check_writable
from placer.common.errors import ResultsError, UsageError
from placer.common.textfile import read_text

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="evaluation folders (with results.json) or the files; several: the same streams")],
    plots: Annotated[bool, typer.Option(help="also redraw the PNG plots beside results.json")] = False,
    against: Annotated[str | None, typer.Option(help="also print each policy's blocking rate minus this policy's, paired by seed")] = None,
    hindsight: Annotated[
        str | None, typer.Option(help="with --against: the clairvoyant reference for the gap closed (default: the evaluated hindsight:...)")
    ] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", help="markdown, csv, or table (fitted to the terminal)")] = TableFormat.markdown,
    outcomes: Annotated[
        bool,
        typer.Option(
            help="also print what a policy can change: avoidable blocking (paired, with --against), unavoidable share, JCT, slowdown",
        ),
    ] = False,
    jobs: Annotated[
        bool, typer.Option(help="also print each policy's p50/p90/p99 of JCT, wait and slowdown over its completed jobs (jobs.csv)")
    ] = False,
    plot_cdf: Annotated[
        Path | None,
        typer.Option(help="draw each policy's CDF of JCT, wait and slowdown over its completed jobs (jobs.csv) into this .png/.pdf/.svg"),
    ] = None,
) -> None:
    """Print an evaluation's summary (blocking rate and throughput, mean ± 95% CI) as markdown, CSV or a terminal table.

    Several evaluations of the same job streams (equal settings but for the policies, e.g. a new
    policy against baselines evaluated before) are reported as one; --plots writes beside the first. A name that
    stands for another policy in each (a learned policy of another file, by sha256) is kept apart, as NAME[FOLDER].
    """
    paths = [_results_file(folder) for folder in results]  # every argument checked before anything is loaded
    if plot_cdf is not None:
        if plot_cdf.suffix.lower() not in PLOT_SUFFIXES:
            raise UsageError(f"--plot-cdf {str(plot_cdf)!r}: name a {', '.join(PLOT_SUFFIXES)} file (its suffix is the format)")
        check_writable(plot_cdf, what="plot")
    result = _loaded(paths, outcomes=outcomes, timelines=plots)
    if plots:
        from placer.evaluate.plots import plot_all

        err_console.print("wrote " + ", ".join(str(p) for p in plot_all(result, paths[0].parent)))
    _check_references(result.config.policies, against, hindsight)  # before any table is printed
    rows = result.summary()
    _say_setting(result, fmt)
    loads = result.config.run_loads  # a replayed trace's: (None,), as its rows record it
    for load in loads:
        if len(loads) > 1:
            say(f"\nload {load}:\n", fmt)
        blocking_table(result, [r for r in rows if r["load"] == load], fmt)
    if outcomes:
        outcomes_table(result, rows, fmt)
    if jobs or plot_cdf is not None:
        samples = samples_of(result, paths)
        if jobs:
            jobs_table(samples, fmt)
        if plot_cdf is not None:
            from placer.evaluate.plots import plot_job_cdfs

            err_console.print(f"wrote {plot_job_cdfs(result, samples, plot_cdf)}")
    if against is not None:
        _against_tables(result, rows, against, hindsight, fmt, outcomes=outcomes)
    elif hindsight is not None:
        raise UsageError("--hindsight needs --against (the gap is closed from that baseline towards hindsight)")
    for table in (deviations_table, tuned_table, chosen_table, members_table, overrides_table):
        table(result, fmt)


def _loaded(paths: list[Path], *, outcomes: bool, timelines: bool):
    """The evaluations in ``paths`` merged into one result (their notes and meaningless settings warned of); one line for
    a file that is not an evaluation's results or lacks what ``outcomes`` needs."""
    import json

    from placer.evaluate import merge_results, read_results
    from placer.evaluate.results import runs_problem
    from placer.evaluate.sanity import meaningless

    loaded = []
    for path in paths:
        text = read_text(path, what="evaluation results")
        try:
            loaded.append(read_results(json.loads(text), path.parent))
        except (json.JSONDecodeError, RecursionError, KeyError, TypeError, ValueError, ValidationError) as exc:
            raise ResultsError(f"{path}: not an evaluation results file ({type(exc).__name__})") from None
        if (problem := runs_problem(loaded[-1].runs, outcomes)) is not None:
            raise ResultsError(f"{path}: {problem}")
        loaded[-1].timelines = _timelines(path.parent / "timelines.json") if timelines else []
    result = merge_results(loaded, _labels(paths))
    for note in result.notes:
        warn(note, "note")
    for line in meaningless(result):
        warn(line)
    return result


def _say_setting(result, fmt: TableFormat) -> None:
    """The report's first line: the cluster, the workload (or the trace) and the cost model the evaluation ran."""
    config, w = result.config, result.config.workload
    if config.trace:
        count = result.runs[0]["jobs"] if result.runs else 0
        tuned = f", tuned on {config.tune_trace}" if config.tune_trace else ""
        say(f"{config.cluster}, trace {config.trace} ({count} jobs){tuned}, {config.strategy} cost model\n", fmt)
        return
    loads_text = ", ".join(map(str, config.load_values))
    first, seeds = config.first_seed, config.seeds
    seeds_text = f"{seeds} seed{'s' if seeds > 1 else ''}"
    if first:  # streams apart from the default seeds 0, 1, ...: say which
        seeds_text += f" ({first}-{first + seeds - 1})" if seeds > 1 else f" (seed {first})"
    say(
        f"{config.cluster}, load {loads_text}, queue {w.queue[0]}, size {w.size[0]}, structure {w.structure[0]}, "
        f"{w.jobs} jobs x {seeds_text}, "
        f"{config.strategy} cost model, graphs: {', '.join(w.graphs) or config.graphs_dir}\n",
        fmt,
    )


def _against_tables(result, rows: list[dict], against: str, hindsight: str | None, fmt: TableFormat, *, outcomes: bool) -> None:
    """--against's tables: paired differences (of avoidable blocking too, with --outcomes) and the gap closed towards hindsight."""
    paired_table(result, rows, against, fmt)
    if outcomes:
        paired_table(result, rows, against, fmt, "avoidable_blocking_rate")
    reference = hindsight or next((p for p in result.config.policies if p.startswith("hindsight")), None)
    if reference is not None:
        gap_table(result, against, reference, fmt)


def _results_file(folder: Path) -> Path:
    """The results.json of an argument (a folder or the file), or a one-line error when there is none."""
    path = folder / "results.json" if folder.is_dir() else folder
    if not path.is_file():
        where = f"no results.json in {str(folder)!r}" if folder.is_dir() else f"{str(folder)!r} does not exist"
        raise ResultsError(f"{where}: give a folder 'placer evaluate --out' wrote, or its results.json")
    return path


def _labels(paths: list[Path]) -> list[str]:
    """A short label per results file, for policies that two evaluations ran with different files: its folder's name,
    or the folder as given where two share a name."""
    names = [path.parent.resolve().name or str(path.parent) for path in paths]
    return names if len(set(names)) == len(names) else [str(path.parent) for path in paths]


def _check_references(policies: list[str], against: str | None, hindsight: str | None) -> None:
    """--against and --hindsight name evaluated policies (and --hindsight comes with --against)."""
    if hindsight is not None and against is None:
        raise UsageError("--hindsight needs --against (the gap is closed from that baseline towards hindsight)")
    for option, name in (("--against", against), ("--hindsight", hindsight)):
        if name is not None and name not in policies:
            raise UsageError(f"{option} {name!r} is not one of the evaluated policies: {', '.join(policies)}")


def _timelines(path: Path) -> list[dict]:
    import json

    try:
        return json.loads(read_text(path, what="timelines")) if path.exists() else []
    except (json.JSONDecodeError, RecursionError):
        raise ResultsError(f"{path}: not valid JSON (or nested too deep)") from None
