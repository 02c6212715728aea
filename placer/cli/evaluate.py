"""``placer evaluate``: every policy on the same simulated job streams; results, summary table and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from placer.cli.app import app, console, progress_bar, split_list, warn
from placer.cli.options import (
    INPUT_FILE,
    INPUT_FOLDER,
    FirstSeed,
    OutFolder,
    check_distinct_betas,
    check_seed_range,
    checked_cluster,
    evaluation_default,
    evaluation_option,
    model_options,
)
from placer.cli.tables import terminal_table
from placer.cli.trained import outside_training
from placer.common.errors import ResultsError, UsageError
from placer.evaluate.config import load_label
from placer.evaluate.stats import per_hour, plus_minus
from placer.sim.workload import WorkloadSpec

DEFAULTS = {"jobs": 1000}  # the workload options whose default here is not WorkloadSpec's
DEFAULT_LOAD = "0.9"


@app.command()
@model_options(WorkloadSpec, "workload", defaults=DEFAULTS, names={"beta_dists": "--beta-dist"}, exclude=("load",))
def evaluate(
    workload: dict,
    load: Annotated[
        str, typer.Option(help="offered load (arrived work / cluster capacity), or several comma-separated: each on the same seeds")
    ] = DEFAULT_LOAD,
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file", callback=checked_cluster)] = "pacml",
    graphs_dir: Annotated[
        Path | None, typer.Option(help="use every *.json graph in this folder instead of --graphs", **INPUT_FOLDER)
    ] = None,
    seeds: Annotated[int, typer.Option(help="runs per policy and beta distribution")] = 3,
    first_seed: FirstSeed = evaluation_default("first_seed"),
    policies: Annotated[
        str, typer.Option(help="comma-separated policy names; learned=LABEL:PATH.pt a policy file of one's own, reported as LABEL")
    ] = "para_max,para_min,fixed:4,fixed:8,random,lean",
    trace: Annotated[Path | None, typer.Option(help="CSV trace (arrival_s,graph,beta,iterations) to replay", **INPUT_FILE)] = None,
    tune_trace: Annotated[
        Path | None,
        typer.Option(help="with --trace: another window of the trace to tune best, adaptive and the like on", **INPUT_FILE),
    ] = None,
    max_degree: Annotated[int, evaluation_option("max_degree", "largest partitioning degree")] = evaluation_default("max_degree"),
    policy_file: Annotated[Path | None, typer.Option(help="trained policy for the 'learned' policy", **INPUT_FILE)] = None,
    strategy: Annotated[
        str, evaluation_option("strategy", "cost model: auto (data x tensor x pipeline), dp, tp, pp, or sipml (PAC-ML)")
    ] = evaluation_default("strategy"),
    workers: Annotated[int, typer.Option(min=1, help="local processes to spread the runs over (same results)")] = 1,
    ray: Annotated[str | None, typer.Option(help="spread the runs over a Ray cluster: its address, or 'local'")] = None,
    out: OutFolder = Path("runs/eval"),
) -> None:
    """Compare policies on the same simulated job streams; write results, summary and plots.

    Policies: para_max, para_min, fixed:K, random, lean (lean:admit=Q for size admission), eff:E, switch:U, best, lookahead
    (lookahead:k=K:h=H), elasticflow and elastic_lean (elastic: running jobs change degree), chronus, learned
    (learned:NAME a shipped policy; learned:below=L places its holds as adaptive would while the measured load is under L,
    learned:last=K those of a job with under K x that JCT left, learned:waiting=W those made while at most W jobs wait);
    +RULE picks a placement rule, @DISCIPLINE a queue order (lean@edf). learned=LABEL:PATH.pt evaluates a policy file of
    one's own under LABEL (several may stand side by side: learned=mine:a.pt,learned=theirs:b.pt); results.json records
    each policy file's sha256.
    --workers N or --ray ADDRESS run the (distribution, seed, policy) runs in parallel, with the same results.
    Beside results.json, jobs.csv holds one row per (policy, run, job): placer report --jobs summarises it.
    """
    from placer.evaluate import EvaluationConfig
    from placer.evaluate.identity import reads_policy_file

    check_seed_range(first_seed, seeds)
    check_distinct_betas(workload.get("beta_dists", ()))
    if trace is not None and (overridden := replaced_by_trace(workload, load)):
        raise UsageError(f"a replayed --trace has its own arrival times, job lengths and deadlines: drop {', '.join(overridden)}")
    loads = parse_loads(load)
    config = EvaluationConfig(
        cluster=str(cluster),
        workload=workload | {"load": loads[0]} | ({"graphs": []} if graphs_dir else {}),
        loads=loads if len(loads) > 1 else (),
        graphs_dir=str(graphs_dir) if graphs_dir else None,
        seeds=seeds,
        first_seed=first_seed,
        policies=split_list(policies),
        trace=str(trace) if trace else None,
        tune_trace=str(tune_trace) if tune_trace else None,
        max_degree=max_degree,
        policy_file=str(policy_file) if policy_file else None,
        strategy=strategy,
    )
    if config.policy_file and not reads_policy_file(config):
        unread = f"--policy-file {config.policy_file!r} is not read: no policy evaluated is a plain 'learned'"
        warn(f"{unread} (learned:NAME and learned=LABEL:PATH name their own)")
    if outside := outside_training(config):
        warn(outside)
    if trace is not None:
        warn_window(trace, str(cluster))
    result = _simulate(config, out, workers=workers, ray=ray)
    _write(result, out)


def _simulate(config, out: Path, *, workers: int, ray: str | None):
    """The evaluation of ``config`` under a progress bar, its per-job table written into ``out`` (made now) as runs end;
    a run that fails leaves no empty ``out`` behind."""
    from placer.evaluate import evaluate as run_evaluation
    from placer.evaluate import total_decisions
    from placer.evaluate.jobs import JOBS_FILE

    parallel = workers > 1 or ray is not None
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)  # now: the per-job table is written there as the runs end
    except OSError as exc:
        raise ResultsError(f"cannot write results to {str(out)!r}: {exc.strerror or exc}") from None
    try:
        with progress_bar() as bar:
            task = bar.add_task("simulating", total=total_decisions(config) if not config.trace else None)
            return run_evaluation(
                config,
                on_job=None if parallel else lambda: bar.advance(task),
                on_task=(lambda jobs: bar.advance(task, jobs)) if parallel else None,
                workers=workers,
                ray_address=ray,
                jobs=out / JOBS_FILE,
            )
    except BaseException:
        if created and not any(out.iterdir()):
            out.rmdir()  # a run that fails (a policy file that does not fit) leaves no empty folder behind
        raise


def _write(result, out: Path) -> None:
    """Results, plots and the summary table; plots of an earlier evaluation in ``out`` that no longer match removed."""
    from placer.evaluate import write_results
    from placer.evaluate.jobs import JOBS_FILE
    from placer.evaluate.plots import plot_all, stale_plots

    paths = write_results(result, out) + [out / JOBS_FILE] + plot_all(result, out)
    console.print(summary_table(result))
    console.print("wrote " + ", ".join(str(p) for p in paths))
    if stale := stale_plots(out, paths):
        for path in stale:
            path.unlink()
        earlier = f"removed {len(stale)} plots of an earlier evaluation in {str(out)!r} ({stale[0].name}, ...)"
        warn(f"{earlier}: they no longer matched results.json", "note")
    warn_meaningless(result)


TRACE_REPLACES = {
    "jobs": "--jobs",
    "structure": "--structure",
    "size": "--size",
    "beta_dists": "--beta-dist",
    "arrival": "--arrival",
    "iterations": "--iterations",
}


def replaced_by_trace(workload: dict, load: str) -> list[str]:
    """The options a replayed trace replaces (its rows give the arrivals, lengths and deadlines) that were given a value
    other than their default: with ``--trace`` they would be recorded and printed but not used."""
    defaults = {name: WorkloadSpec.model_fields[name].default for name in TRACE_REPLACES} | DEFAULTS
    listed = {name: tuple(v) if isinstance(v, list | tuple) else v for name, v in workload.items()}
    given = [flag for name, flag in TRACE_REPLACES.items() if name in listed and listed[name] != defaults[name]]
    return (["--load"] if load.strip() != DEFAULT_LOAD else []) + given


def warn_window(trace: Path, cluster: str) -> None:
    """A note on stderr saying what the replayed window holds, and a warning with what would make it meaningful when most
    of its work is blocked whatever the policy (:mod:`placer.workloads.traces.window`)."""
    from placer.workloads.traces.window import advice, describe

    window = describe(trace, cluster)
    warn(window.line(), "note")
    if (line := advice(window)) is not None:
        warn(line)


def warn_meaningless(result) -> None:
    """A warning line on stderr per way the evaluation's numbers mean nothing (:func:`placer.evaluate.sanity.meaningless`)."""
    from placer.evaluate.sanity import meaningless

    for line in meaningless(result):
        warn(line)


def parse_loads(text: str) -> tuple[float, ...]:
    """``"0.5,0.9,1.3"`` -> ``(0.5, 0.9, 1.3)``; text that is no list of offered loads (the one rule of
    :func:`~placer.workloads.generator.check_load`: above 0, below 100) is a one-line error."""
    from placer.workloads.generator import check_load

    try:
        loads = tuple(float(part) for part in split_list(text))
    except ValueError:
        loads = ()
    if not loads:
        raise UsageError(f"--load {text!r}: give one number or several, comma-separated (0.5,0.9,1.3)")
    return tuple(check_load(load, what="--load") for load in loads)


def summary_table(result, width: int | None = None) -> Table:
    """The evaluation's summary for the terminal: one row per (load, beta, policy), the best blocking rate in bold;
    ``avoidable``: blocked among the jobs some policy could accept (placer.sim.metrics). It fits ``width`` columns
    (default: the terminal's; :func:`~placer.cli.tables.terminal_table`); a replayed trace's rows say ``trace``."""
    c = result.config
    w = c.workload
    several = len(c.load_values) > 1
    source = f"trace {Path(c.trace).name}" if c.trace else f"load {', '.join(map(str, c.load_values))}"  # a trace has its own arrivals
    setting = f"{c.cluster}, {source}" + (f", queue {w.queue[0]}" if w.queue[0] != "none" else "")
    setting += f", size {w.size[0]}" if w.size[0] != "const" else ""
    setting += f", structure {w.structure[0]}" if w.structure[0] != "iid" else ""
    rows = result.summary()
    body, bold = [], set()
    for i, row in enumerate(rows):
        same = [r["blocking_rate"] for r in rows if r["beta_dist"] == row["beta_dist"] and r["load"] == row["load"]]
        if row["blocking_rate"] == min(same):
            bold.add((i, 2 + several))
        body.append(
            ([load_label(row["load"])] if several else [])
            + [
                row["beta_dist"],
                row["policy"],
                plus_minus(row["blocking_rate"], row["blocking_rate_ci95"]),
                f"{row['avoidable_blocking_rate']:.3f}",
                per_hour(row["throughput_jobs_per_hour"], row["throughput_jobs_per_hour_ci95"]),
                f"{row['mean_jct_s']:.0f}",
                f"{row['utilization']:.3f}",
            ]
        )
    header = ["load"] * several + ["beta", "policy", "blocking", "avoid.", "jobs/h", "JCT s", "util."]
    return terminal_table(header, body, title=f"{setting}, {c.seeds} seeds (mean ± 95% CI)", bold=bold, width=width or console.width)
