"""``placer report``: an evaluation's summary as markdown, paired differences and planner deviations."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Annotated

import typer
from pydantic import ValidationError

from placer.cli.app import app, err_console, warn
from placer.cli.tables import TableFormat, emit, emit_by_beta, say
from placer.cli.verdicts import verdict_lines
from placer.common.atomic import check_writable
from placer.common.errors import ResultsError, UsageError
from placer.common.textfile import read_text
from placer.evaluate.stats import per_hour, per_hour_spec, plus_minus

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
        loaded[-1].timelines = _timelines(path.parent / "timelines.json") if plots else []
    result = merge_results(loaded, _labels(paths))
    for note in result.notes:
        warn(note, "note")
    for line in meaningless(result):
        warn(line)
    path = paths[0]
    if plots:
        from placer.evaluate.plots import plot_all

        err_console.print("wrote " + ", ".join(str(p) for p in plot_all(result, path.parent)))
    _check_references(result.config.policies, against, hindsight)  # before any table is printed
    rows = result.summary()
    w = result.config.workload
    if result.config.trace:
        count = result.runs[0]["jobs"] if result.runs else 0
        tuned = f", tuned on {result.config.tune_trace}" if result.config.tune_trace else ""
        say(f"{result.config.cluster}, trace {result.config.trace} ({count} jobs){tuned}, {result.config.strategy} cost model\n", fmt)
    else:
        loads_text = ", ".join(map(str, result.config.load_values))
        first, seeds = result.config.first_seed, result.config.seeds
        seeds_text = f"{seeds} seed{'s' if seeds > 1 else ''}"
        if first:  # streams apart from the default seeds 0, 1, ...: say which
            seeds_text += f" ({first}-{first + seeds - 1})" if seeds > 1 else f" (seed {first})"
        say(
            f"{result.config.cluster}, load {loads_text}, queue {w.queue[0]}, size {w.size[0]}, structure {w.structure[0]}, "
            f"{w.jobs} jobs x {seeds_text}, "
            f"{result.config.strategy} cost model, graphs: {', '.join(w.graphs) or result.config.graphs_dir}\n",
            fmt,
        )
    loads = result.config.load_values
    for load in loads:
        if len(loads) > 1:
            say(f"\nload {load}:\n", fmt)
        _blocking_table(result, [r for r in rows if r["load"] == load], fmt)
    if outcomes:
        _outcomes_table(result, rows, fmt)
    if jobs or plot_cdf is not None:
        samples = _job_samples(result, paths)
        if jobs:
            _jobs_table(samples, fmt)
        if plot_cdf is not None:
            from placer.evaluate.plots import plot_job_cdfs

            err_console.print(f"wrote {plot_job_cdfs(result, samples, plot_cdf)}")
    if against is not None:
        _paired_table(result, rows, against, fmt)
        if outcomes:
            _paired_table(result, rows, against, fmt, "avoidable_blocking_rate")
        reference = hindsight or next((p for p in result.config.policies if p.startswith("hindsight")), None)
        if reference is not None:
            _gap_table(result, against, reference, fmt)
    elif hindsight is not None:
        raise UsageError("--hindsight needs --against (the gap is closed from that baseline towards hindsight)")
    _deviations_table(result, fmt)
    _tuned_table(result, fmt)
    _chosen_table(result, fmt)
    _members_table(result, fmt)
    _overrides_table(result, fmt)


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


def _blocking_table(result, rows: list[dict], fmt: TableFormat) -> None:
    """One row per policy: blocking rate and jobs/hour per beta distribution (the best blocking in bold), of one load's ``rows``."""
    betas = result.config.beta_labels
    best = {b: min(r["blocking_rate"] for r in rows if r["beta_dist"] == b) for b in betas}
    body, bold = [], set()
    for i, policy in enumerate(result.config.policies):
        cells = {r["beta_dist"]: r for r in rows if r["policy"] == policy}
        row = [policy]
        for k, b in enumerate(betas):
            row += [
                plus_minus(cells[b]["blocking_rate"], cells[b]["blocking_rate_ci95"]),
                per_hour(cells[b]["throughput_jobs_per_hour"], cells[b]["throughput_jobs_per_hour_ci95"]),
            ]
            if cells[b]["blocking_rate"] == best[b]:
                bold.add((i, 1 + 2 * k))
        body.append(row)
    emit_by_beta(body, betas, ["blocking", "jobs/h"], fmt, bold=bold)


OUTCOME_HEADER = [
    "load",
    "beta",
    "policy",
    "blocking",
    "unavoidable",
    "avoidable blocking",
    "mean JCT (s)",
    "p95 JCT (s)",
    "slowdown",
    "jobs/h",
    "device-h/job",
]


def _outcomes_table(result, rows: list[dict], fmt: TableFormat) -> None:
    """One row per (load, beta, policy): what a policy can change (placer.sim.metrics), means over seeds;
    the least avoidable blocking of each (load, beta) in bold."""
    say(
        "\nWhat a policy can change (blocked among the jobs the fastest placement on the idle cluster serves in time; mean ± 95% CI):\n",
        fmt,
    )
    body, bold = [], set()
    for i, r in enumerate(rows):
        same = [o["avoidable_blocking_rate"] for o in rows if (o["load"], o["beta_dist"]) == (r["load"], r["beta_dist"])]
        if r["avoidable_blocking_rate"] == min(same):
            bold.add((i, 5))
        body.append(
            [
                "trace" if result.config.trace else str(r["load"]),  # a replayed trace has its own arrivals: no load was set
                r["beta_dist"],
                r["policy"],
                f"{r['blocking_rate']:.3f}",
                f"{r['unavoidable_share']:.3f}",
                plus_minus(r["avoidable_blocking_rate"], r["avoidable_blocking_rate_ci95"]),
                f"{r['mean_jct_s']:.0f}",
                f"{r['p95_jct_s']:.0f}",
                f"{r['mean_slowdown']:.2f}",
                f"{r['throughput_jobs_per_hour']:{per_hour_spec(r['throughput_jobs_per_hour'])}}",
                f"{r['device_hours_per_job']:.3f}",
            ]
        )
    emit(OUTCOME_HEADER, body, fmt, bold=bold)


def _job_samples(result, paths: list[Path]):
    """The completed jobs' JCT, wait and slowdown per policy, from the per-job tables of ``result`` (a warning for the
    policies of an evaluation that wrote none; a one-line error when none did)."""
    from placer.evaluate.jobs import job_samples, read_jobs

    covered = {shown for table in result.jobs for shown in table.names.values()}
    missing = [p for p in result.config.policies if p not in covered]
    if not covered:
        where = ", ".join(str(path.parent) for path in paths)
        raise ResultsError(f"no per-job table (jobs.csv) in {where}: evaluations before placer wrote one have none; evaluate again")
    if missing:
        warn(f"no per-job table (jobs.csv) for {', '.join(missing)}: left out of the per-job percentiles")
    return job_samples(read_jobs(result.jobs), [p for p in result.config.policies if p in covered])


def _jobs_table(samples, fmt: TableFormat) -> None:
    """Per policy: completed and blocked jobs, and the p50/p90/p99 of JCT, wait and slowdown over the completed jobs."""
    from placer.evaluate.jobs import DISTRIBUTIONS, PERCENTILES, percentiles

    say(
        "\nPer job, over every completed job of every run (JCT: start to finish; wait: arrival to start; slowdown: "
        "(wait + JCT) / fastest JCT on the idle cluster; percentiles linear between ranks):\n",
        fmt,
    )
    units = {"jct_s": ("JCT", " (s)", ".1f"), "wait_s": ("wait", " (s)", ".1f"), "slowdown": ("slowdown", "", ".2f")}
    header = ["policy", "completed", "blocked"]
    header += [f"{units[m][0]} p{q}{units[m][1]}" for m in DISTRIBUTIONS for q in PERCENTILES]
    body = []
    for policy in samples.values:
        cells = [policy, str(samples.completed(policy)), str(samples.blocked[policy])]
        for metric in DISTRIBUTIONS:
            spec = units[metric][2]
            cells += ["-" if math.isnan(v) else f"{v:{spec}}" for v in percentiles(samples.array(policy, metric))]
        body.append(cells)
    emit(header, body, fmt)
    _reasons_table(samples, fmt)


def _reasons_table(samples, fmt: TableFormat) -> None:
    """Per policy, its blocked jobs by why (each reason some policy's jobs were blocked for, in BlockReason's order): a
    policy that trades one reason for another (jobs expiring in the queue for a full queue) shows it here."""
    from placer.sim.types import BlockReason

    seen = {reason for counts in samples.reasons.values() for reason in counts}
    if not seen:
        return
    known = [r for r in BlockReason if r.value in seen]
    shown = [r.value for r in known] + sorted(seen - set(BlockReason))
    meanings = "; ".join(f"{r.value}: {r.meaning}" for r in known)
    say(f"\nWhy the blocked jobs were blocked (jobs; {meanings}):\n", fmt)
    body = [[policy, str(samples.blocked[policy]), *(str(samples.reasons[policy][r]) for r in shown)] for policy in samples.values]
    emit(["policy", "blocked", *shown], body, fmt)


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


def _paired_table(result, rows, against: str, fmt: TableFormat, metric: str = "blocking_rate") -> None:
    """Each policy's ``metric`` minus ``against``'s, paired by seed (and load), per beta distribution; then a line per
    row (and per load) saying which blocks fewer and whether the paired interval resolves it (:mod:`placer.cli.verdicts`)."""
    if against not in result.config.policies:
        raise UsageError(f"--against {against!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_labels
    pooled = " and loads" if len(result.config.load_values) > 1 else ""
    what = "Blocking rate" if metric == "blocking_rate" else "Avoidable blocking rate"
    say(f"\n{what} minus {against}'s on the same job streams (mean ± 95% CI over seeds{pooled}; relative change):\n", fmt)
    body = []
    base = {b: fmean(r[metric] for r in rows if r["policy"] == against and r["beta_dist"] == b) for b in betas}
    for policy in result.config.policies:
        if policy == against:
            continue
        cells = []
        for b in betas:
            mean, half = result.paired(policy, against, b, metric)
            relative = f" ({mean / base[b]:+.0%})" if base[b] > 0 else ""
            cells.append(plus_minus(mean, half, "+.3f").replace("± +", "± ") + relative)
        body.append([policy, *cells])
    emit_by_beta(body, betas, [f"minus {against}"], fmt)
    bullet = "- " if fmt == TableFormat.markdown else ""
    say("\n" + "\n".join(bullet + line for line in verdict_lines(result, against, metric)), fmt)


def _gap_table(result, against: str, reference: str, fmt: TableFormat) -> None:
    """Per policy, the share of the gap between ``against`` and the clairvoyant ``reference`` it closes."""
    if reference not in result.config.policies:
        raise UsageError(f"--hindsight {reference!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_labels
    say(f"\nGap to {reference} closed: ({against} - policy) / ({against} - {reference}), paired means:\n", fmt)
    body = []
    for policy in result.config.policies:
        if policy in (against, reference):
            continue
        cells = []
        for b in betas:
            saved, _ = result.paired(against, policy, b)
            room, _ = result.paired(against, reference, b)
            cells.append(f"{saved / room:+.0%}" if room > 0 else "n/a (no gap)")
        body.append([policy, *cells])
    emit_by_beta(body, betas, ["gap closed"], fmt)


def _reporting(result, statistic: str) -> list[str]:
    """The evaluated policies whose runs report ``statistic`` in their ``policy_stats``."""
    return [p for p in result.config.policies if any(statistic in r.get("policy_stats", {}) for r in result.runs if r["policy"] == p)]


def _tuned_table(result, fmt: TableFormat) -> None:
    """The admission threshold each tuned policy (lean:admit=best) chose per beta distribution, on its tuning streams."""
    tuned = _reporting(result, "admit")
    if not tuned:
        return
    betas = result.config.beta_labels
    say("\nThreshold chosen on tuning streams (apart from the evaluated ones):\n", fmt)
    body = []
    for policy in tuned:
        chosen = {r["beta_dist"]: r["policy_stats"]["admit"] for r in result.runs if r["policy"] == policy}
        body.append([policy, *(f"admit={chosen[b]}" for b in betas)])
    emit_by_beta(body, betas, ["threshold"], fmt)


def _chosen_table(result, fmt: TableFormat) -> None:
    """The member each ``best`` policy chose per load and beta distribution, on its tuning streams."""
    _by_load_table(result, fmt, ("chosen", "chosen"), "Member chosen on tuning streams (apart from the evaluated ones)", _chosen)


def _members_table(result, fmt: TableFormat) -> None:
    """The share of decisions each ``adaptive`` policy gave each member, per load and beta distribution (all seeds)."""
    title = "Decisions by member (adaptive: the member of the load it measured; all seeds)"
    _by_load_table(result, fmt, ("decisions_by_member", "decisions"), title, _member_shares)
    for policy in _reporting(result, "decisions_by_member"):
        stats = next(r["policy_stats"] for r in result.runs if r["policy"] == policy and "policy_stats" in r)
        table = ", ".join(f"{load:.2f} {member}" for load, member in stats["table"])
        say(
            f"\n{policy} as tuned: measured load -> member {table}; the meter over {stats['window']} arrivals, "
            f"a member changed after {stats['sticky']} arrivals in a row asking for it\n",
            fmt,
        )


def _overrides_table(result, fmt: TableFormat) -> None:
    """For a gate (``learned:below=L``, ``:last=K``, ``:waiting=W``): the holds it placed as ``adaptive`` would, per job, per
    load and beta distribution."""
    title = "Holds placed as adaptive would (learned:below=L, :last=K or :waiting=W; per job, all seeds)"
    _by_load_table(result, fmt, ("overrides", "overrides"), title, _per_job)


def _per_job(runs: list[dict]) -> str:
    return f"{sum(r['policy_stats']['overrides'] for r in runs) / sum(r['jobs'] for r in runs):.3f}"


def _chosen(runs: list[dict]) -> str:
    return runs[-1]["policy_stats"]["chosen"]


def _member_shares(runs: list[dict]) -> str:
    counts = sum((Counter(r["policy_stats"]["decisions_by_member"]) for r in runs), Counter())
    return ", ".join(f"{name} {n / counts.total():.0%}" for name, n in counts.most_common())


def _by_load_table(result, fmt: TableFormat, statistic: tuple[str, str], title: str, cell: Callable[[list[dict]], str]) -> None:
    """A row per policy reporting ``statistic`` (its key in ``policy_stats`` and its column's name) and load, a column per
    beta distribution: ``cell`` of the policy's runs there."""
    policies = _reporting(result, statistic[0])
    if not policies:
        return
    betas = result.config.beta_labels
    trace = bool(result.config.trace)  # one replayed trace: no load was set
    say(f"\n{title}{'' if trace else ', by load'}:\n", fmt)
    body = []
    for policy in policies:
        for load in result.config.load_values:
            runs = [r for r in result.runs if r["policy"] == policy and r.get("load", load) == load]
            cells = [[r for r in runs if r["beta_dist"] == b] for b in betas]
            body.append([policy if trace else f"{policy} (load {load})", *(cell(here) if here else "-" for here in cells)])
    emit_by_beta(body, betas, [statistic[1]], fmt)


def _deviations_table(result, fmt: TableFormat) -> None:
    """For planners that count them: the share of offers where they left their base rule, by kind (summed over seeds)."""

    planners = _reporting(result, "offers")
    if not planners:
        return
    betas = result.config.beta_labels
    say("\nOffers where a planner left its base rule (all seeds; by kind):\n", fmt)
    body = []
    for policy in planners:
        cells = []
        for b in betas:
            stats = [r["policy_stats"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == b and "policy_stats" in r]
            offers = sum(s["offers"] for s in stats)
            kinds = sum((Counter(s["deviations"]) for s in stats), Counter())
            share = f"{kinds.total() / offers:.1%}" if offers else "-"
            cells.append(f"{share} of {offers} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")")
        body.append([policy, *cells])
    emit_by_beta(body, betas, ["deviations"], fmt)
