"""``placer bound``: the clairvoyant MILP bound of the loss system on the streams ``evaluate`` draws."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from placer.cli.app import app, console, progress_bar
from placer.cli.options import (
    FirstSeed,
    OutFolder,
    check_distinct_betas,
    check_seed_range,
    checked_cluster,
    evaluation_default,
    evaluation_option,
    model_options,
)
from placer.sim.workload import WorkloadSpec
from placer.workloads.generator import check_load


@app.command()
@model_options(WorkloadSpec, "workload", defaults={"jobs": 1000}, names={"beta_dists": "--beta-dist"}, exclude=("queue",))
def bound(
    workload: dict,
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file", callback=checked_cluster)] = "pacml",
    seeds: Annotated[int, typer.Option(help="runs per beta distribution")] = 3,
    first_seed: FirstSeed = evaluation_default("first_seed"),
    max_degree: Annotated[int, evaluation_option("max_degree", "largest partitioning degree")] = evaluation_default("max_degree"),
    strategy: Annotated[str, evaluation_option("strategy", "cost model: auto, dp, tp, pp, or sipml")] = evaluation_default("strategy"),
    time_limit: Annotated[float, typer.Option(min=1, help="seconds of solver time per run")] = 60.0,
    out: OutFolder = Path("runs/bound"),
    verbose: Annotated[bool, typer.Option("--verbose", help="show the solver's log (quiet otherwise)")] = False,
) -> None:
    """The clairvoyant bound of the loss system on the job streams 'evaluate' draws with the same options.

    Per run: the blocking rate of the best schedule found in hindsight and the solver's lower bound
    (see placer/baselines/clairvoyant.py). Writes bound.json; pair with 'placer evaluate' output by seed.
    """
    import dataclasses
    import json

    from placer.baselines.clairvoyant import ClairvoyantResult, clairvoyant, summarize
    from placer.evaluate import EvaluationConfig, Runner

    check_seed_range(first_seed, seeds)
    check_distinct_betas(workload.get("beta_dists", ()))
    if "load" in workload:
        check_load(workload["load"], what="--load")  # the rule of every --load, in its words (not the config's)
    config = EvaluationConfig(
        cluster=cluster, workload=workload, seeds=seeds, first_seed=first_seed, policies=["lean"], max_degree=max_degree, strategy=strategy
    )
    runner, runs = Runner(config), []
    with progress_bar() as bar:
        task = bar.add_task("solving", total=len(config.beta_labels) * seeds)
        for i, beta in enumerate(config.beta_labels):
            for seed in range(first_seed, first_seed + seeds):
                jobs = runner.jobs(i, seed)
                with solver_output(verbose):
                    result = clairvoyant(runner.cost, jobs, max_degree=max_degree, time_limit_s=time_limit, verbose=verbose)
                runs.append({"beta_dist": beta, "seed": seed, **dataclasses.asdict(result)})
                bar.advance(task)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bound.json").write_text(json.dumps({"config": config.model_dump(mode="json"), "runs": runs}, indent=1) + "\n")
    w = config.workload
    table = Table(title=f"clairvoyant bound: {cluster}, load {w.load}, {seeds} seeds x {w.jobs} jobs, {time_limit:g} s each")
    for column in ("beta", "best schedule blocking", "lower bound", "solved to optimality"):
        table.add_column(column, justify="left" if column == "beta" else "right")
    for beta in config.beta_labels:
        mine = [ClairvoyantResult(**{k: v for k, v in r.items() if k not in ("beta_dist", "seed")}) for r in runs if r["beta_dist"] == beta]
        s = summarize(mine)
        table.add_row(beta, f"{s['blocking_rate']:.3f}", f"{s['lower_bound']:.3f}", f"{s['optimal']:.0%}")
    console.print(table)
    console.print(f"wrote {out / 'bound.json'}")


@contextlib.contextmanager
def solver_output(verbose: bool) -> Iterator[None]:
    """Unless ``verbose``: what the solver prints past Python dropped (HiGHS writes to the process's stdout from C, some
    lines whatever its options say) and its Python warnings too. Stderr, the progress bar's, is left alone."""
    if verbose:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(null.fileno(), 1)
            yield
            sys.stdout.flush()
            _flush_c_streams()  # C's buffered stdout still holds the solver's lines: out to /dev/null with them
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_streams() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to reach (not a POSIX build): nothing buffered there to lose
        pass
