"""The ``placer`` command line.

    placer evaluate --cluster pacml --graphs alexnet,vgg16,resnet18,squeezenet1_0,gnmt \\
        --beta-dist A,B,C,D --load 0.9 --jobs 1000 --seeds 3 \\
        --policies para_max,para_min,fixed:4,lean --out runs/eval
    placer bound --cluster pacml --beta-dist A,B,C,D --seeds 5 --time-limit 60
    placer predict resnet50 --cluster dgx8x8 --degree 8 [--strategy auto] [--batch-size 2048]
    placer import pipedream ../shared/data/pipedream/vgg16.txt --out vgg16.json
    placer graphs
    placer clusters

Plug-ins add commands (``placer train`` from ``policies``) through the entry-point group
``placer.cli``. User mistakes print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from placer.catalog import PACML_GRAPHS, resolve_graph, shipped_graph_names
from placer.cluster import load_cluster, preset_names
from placer.data import data_dir
from placer.errors import PlacerError

app = typer.Typer(add_completion=False, help="Partition and place DNN training jobs on a GPU cluster.")
import_app = typer.Typer(no_args_is_help=True, help="Convert job graphs from other formats.")
app.add_typer(import_app, name="import")
console = Console()
err_console = Console(stderr=True)


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


def _split(value: str) -> list[str]:
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


@app.command()
def evaluate(
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    graphs: Annotated[str, typer.Option(help="comma-separated graph names or JSON paths")] = ",".join(PACML_GRAPHS),
    graphs_dir: Annotated[Path | None, typer.Option(help="use every *.json graph in this folder instead")] = None,
    beta_dist: Annotated[str, typer.Option(help="comma-separated: A, B, C, D, uniform:LO:HI, const:B")] = "A,B,C,D",
    load: Annotated[float, typer.Option(help="offered load (arrived work / cluster capacity)")] = 0.9,
    jobs: Annotated[int, typer.Option(help="arrivals per run")] = 1000,
    seeds: Annotated[int, typer.Option(help="runs per policy and beta distribution")] = 3,
    policies: Annotated[str, typer.Option(help="comma-separated policy names")] = "para_max,para_min,fixed:4,fixed:8,random,lean",
    arrival: Annotated[str, typer.Option(help="poisson or fixed")] = "poisson",
    trace: Annotated[Path | None, typer.Option(help="CSV trace (arrival_s,graph,beta,iterations) to replay")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="override every graph's iteration count")] = None,
    max_degree: Annotated[int, typer.Option(help="largest partitioning degree")] = 16,
    policy_file: Annotated[Path | None, typer.Option(help="trained policy for the 'learned' policy")] = None,
    strategy: Annotated[str, typer.Option(help="cost model: auto (data x tensor x pipeline), dp, tp, pp, or sipml (PAC-ML)")] = "auto",
    queue: Annotated[str, typer.Option(help="waiting queue: none (loss system), fifo, edf, sjf, optionally -bf and :CAPACITY")] = "none",
    size: Annotated[str, typer.Option(help="job length spread: const, or loguniform:LO:HI (iterations x a factor)")] = "const",
    workers: Annotated[int, typer.Option(min=1, help="local processes to spread the runs over (same results)")] = 1,
    ray: Annotated[str | None, typer.Option(help="spread the runs over a Ray cluster: its address, or 'local'")] = None,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("runs/eval"),
) -> None:
    """Compare policies on the same simulated job streams; write results, summary and plots.

    Policies: para_max, para_min, fixed:K, random, lean (lean:admit=Q for size admission), lookahead
    (lookahead:k=K:h=H), learned; +RULE picks a placement rule, @DISCIPLINE a queue order (lean@edf).
    --workers N or --ray ADDRESS run the (distribution, seed, policy) runs in parallel, with the same results.
    """
    if out.exists() and not out.is_dir():
        raise PlacerError(f"--out {str(out)!r} is a file, not a folder")
    from placer.evaluation import EvaluationConfig, total_decisions, write_results
    from placer.evaluation import evaluate as run_evaluation
    from placer.plots import plot_all

    config = EvaluationConfig(
        cluster=str(cluster),
        graphs=[] if graphs_dir else _split(graphs),
        graphs_dir=str(graphs_dir) if graphs_dir else None,
        beta_dists=["trace"] if trace else _split(beta_dist),
        load=load,
        jobs=jobs,
        seeds=seeds,
        policies=_split(policies),
        arrival=arrival,
        trace=str(trace) if trace else None,
        iterations=iterations,
        max_degree=max_degree,
        policy_file=str(policy_file) if policy_file else None,
        strategy=strategy,
        queue=queue,
        size=size,
    )
    parallel = workers > 1 or ray is not None
    with progress_bar() as bar:
        task = bar.add_task("simulating", total=total_decisions(config) if not trace else None)
        result = run_evaluation(
            config,
            on_job=None if parallel else lambda: bar.advance(task),
            on_task=(lambda jobs: bar.advance(task, jobs)) if parallel else None,
            workers=workers,
            ray_address=ray,
        )
    paths = write_results(result, out) + plot_all(result, out)
    console.print(summary_table(result))
    console.print("wrote " + ", ".join(str(p) for p in paths))


def summary_table(result) -> Table:
    c = result.config
    setting = f"{c.cluster}, load {c.load}" + (f", queue {c.queue}" if c.queue != "none" else "")
    setting += f", size {c.size}" if c.size != "const" else ""
    table = Table(title=f"{setting}, {c.seeds} seeds (mean ± 95% CI)")
    for column in ("beta", "policy", "blocking rate", "jobs/hour", "mean JCT (s)", "utilisation"):
        table.add_column(column, justify="left" if column in ("beta", "policy") else "right")
    rows = result.summary()
    for row in rows:
        best = min(r["blocking_rate"] for r in rows if r["beta_dist"] == row["beta_dist"])
        style = "bold green" if row["blocking_rate"] == best else None
        table.add_row(
            row["beta_dist"],
            row["policy"],
            f"{row['blocking_rate']:.3f} ± {row['blocking_rate_ci95']:.3f}",
            f"{row['throughput_jobs_per_hour']:.1f} ± {row['throughput_jobs_per_hour_ci95']:.1f}",
            f"{row['mean_jct_s']:.0f}",
            f"{row['utilization']:.3f}",
            style=style,
        )
    return table


@app.command()
def bound(
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    graphs: Annotated[str, typer.Option(help="comma-separated graph names or JSON paths")] = ",".join(PACML_GRAPHS),
    beta_dist: Annotated[str, typer.Option(help="comma-separated: A, B, C, D, uniform:LO:HI, const:B")] = "A,B,C,D",
    load: Annotated[float, typer.Option(help="offered load (arrived work / cluster capacity)")] = 0.9,
    jobs: Annotated[int, typer.Option(help="arrivals per run")] = 1000,
    seeds: Annotated[int, typer.Option(help="runs per beta distribution")] = 3,
    max_degree: Annotated[int, typer.Option(help="largest partitioning degree")] = 16,
    strategy: Annotated[str, typer.Option(help="cost model: auto, dp, tp, pp, or sipml")] = "auto",
    size: Annotated[str, typer.Option(help="job length spread: const, or loguniform:LO:HI")] = "const",
    time_limit: Annotated[float, typer.Option(min=1, help="seconds of solver time per run")] = 60.0,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("runs/bound"),
) -> None:
    """The clairvoyant bound of the loss system on the job streams 'evaluate' draws with the same options.

    Per run: the blocking rate of the best schedule found in hindsight and the solver's lower bound
    (see placer/clairvoyant.py). Writes bound.json; pair with 'placer evaluate' output by seed.
    """
    import dataclasses
    import json

    import numpy as np

    from placer.clairvoyant import ClairvoyantResult, clairvoyant, summarize
    from placer.evaluation import EvaluationConfig, Runner

    config = EvaluationConfig(
        cluster=cluster, graphs=_split(graphs), beta_dists=_split(beta_dist), load=load, jobs=jobs, seeds=seeds,
        policies=["lean"], max_degree=max_degree, strategy=strategy, size=size,
    )  # fmt: skip
    runner, runs = Runner(config), []
    with progress_bar() as bar:
        task = bar.add_task("solving", total=len(config.beta_dists) * seeds)
        for i, beta in enumerate(config.beta_dists):
            for seed in range(seeds):
                stream = runner.workload(beta).jobs(np.random.default_rng([seed, i]))
                result = clairvoyant(runner.cost, stream, max_degree=max_degree, time_limit_s=time_limit)
                runs.append({"beta_dist": beta, "seed": seed, **dataclasses.asdict(result)})
                bar.advance(task)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bound.json").write_text(json.dumps({"config": config.model_dump(), "runs": runs}, indent=1) + "\n")
    table = Table(title=f"clairvoyant bound: {cluster}, load {load}, {seeds} seeds x {jobs} jobs, {time_limit:g} s each")
    for column in ("beta", "best schedule blocking", "lower bound", "solved to optimality"):
        table.add_column(column, justify="left" if column == "beta" else "right")
    for beta in config.beta_dists:
        mine = [ClairvoyantResult(**{k: v for k, v in r.items() if k not in ("beta_dist", "seed")}) for r in runs if r["beta_dist"] == beta]
        s = summarize(mine)
        table.add_row(beta, f"{s['blocking_rate']:.3f}", f"{s['lower_bound']:.3f}", f"{s['optimal']:.0%}")
    console.print(table)
    console.print(f"wrote {out / 'bound.json'}")


@app.command()
def predict(
    graph: Annotated[str, typer.Argument(help="job graph JSON file (or a shipped graph's name)")],
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    degree: Annotated[int | None, typer.Option(help="devices, placed on the fewest servers of the idle cluster")] = None,
    devices: Annotated[str | None, typer.Option(help="comma-separated device names instead, e.g. s0-g0,s0-g1")] = None,
    strategy: Annotated[str, typer.Option(help="auto (fastest dp x tp x pp that fits), dp, tp, pp, or sipml (PAC-ML)")] = "auto",
    batch_size: Annotated[int | None, typer.Option(help="global batch (rescales the graph linearly)")] = None,
    precision: Annotated[str | None, typer.Option(help="training precision: fp32, tf32, bf16 or fp16")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="training iterations (default: the graph's)")] = None,
) -> None:
    """Print the cost model's prediction (iteration time, strategy, memory, communication) as JSON."""
    from placer.query import predict as predict_placement

    if (degree is None) == (devices is None):
        raise PlacerError("give exactly one of --degree or --devices")
    job = resolve_graph(graph)
    if precision is not None:
        job = job.with_precision(precision)
    if batch_size is not None:
        job = job.with_batch_size(batch_size)
    target = degree if degree is not None else _split(devices or "")
    typer.echo(predict_placement(job, cluster, target, strategy=strategy, iterations=iterations).model_dump_json(indent=2))


@app.command()
def place(
    graph: Annotated[str, typer.Argument(help="job graph JSON file (or a shipped graph's name)")],
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    policy_file: Annotated[Path | None, typer.Option(help="trained policy file: decide with the learned policy")] = None,
    heuristic: Annotated[str | None, typer.Option(help="decide with this heuristic instead (default: lean)")] = None,
    beta: Annotated[float, typer.Option(help="deadline = beta x sequential JCT, beta in (0, 1]")] = 1.0,
    iterations: Annotated[int | None, typer.Option(min=1, help="training iterations (default: the graph's)")] = None,
    state: Annotated[Path | None, typer.Option(help='occupancy JSON: {"busy": {"s0-g0": seconds_until_free, ...}}')] = None,
) -> None:
    """Print the partitioning degree, devices and predicted JCT for one job, as JSON."""
    import json

    from placer.query import ClusterState
    from placer.query import place as decide_placement

    if policy_file and heuristic:
        raise PlacerError("give --policy-file or --heuristic, not both")
    occupancy = None
    if state is not None:
        try:
            occupancy = ClusterState.model_validate(json.loads(state.read_text()))
        except OSError as exc:
            raise PlacerError(f"cannot read state {str(state)!r}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise PlacerError(f"{state}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
    policy = "learned" if policy_file else (heuristic or "lean")
    decision = decide_placement(
        resolve_graph(graph),
        cluster,
        occupancy,
        policy,
        beta=beta,
        iterations=iterations,
        policy_file=str(policy_file) if policy_file else None,
    )
    typer.echo(decision.model_dump_json(indent=2))


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="where the demo evaluation is written")] = Path("runs/demo"),
    jobs: Annotated[int, typer.Option(help="arrivals per run")] = 300,
) -> None:
    """Load the shipped policy, place one job, predict a split, and compare with the heuristics on a short run."""
    from placer.evaluation import EvaluationConfig, total_decisions, write_results
    from placer.evaluation import evaluate as run_evaluation
    from placer.plots import plot_all
    from placer.policy import plugin_names
    from placer.query import place as decide_placement
    from placer.query import predict as predict_placement

    shipped = data_dir() / "policies" / "pacml.pt"
    learned = "learned" in plugin_names() and shipped.exists()
    if not learned:
        console.print("[yellow]learned policy unavailable (install '.[all]' and keep data/policies/pacml.pt); heuristics only[/]")
    graph = resolve_graph("resnet101")
    console.rule("1. place one job: resnet101 (held out of training), deadline 0.25 x sequential, 8 DGX A100 (dgx8x8)")
    decision = decide_placement(
        graph, "dgx8x8", None, "learned" if learned else "lean", beta=0.25, policy_file=str(shipped) if learned else None
    )
    console.print_json(decision.model_dump_json())
    console.rule("2. predict: gpt2_medium, batch 4, on 16 GPUs (two servers): the fastest data x tensor x pipeline split")
    prediction = predict_placement(resolve_graph("gpt2_medium"), "dgx8x8", 16)
    console.print_json(prediction.model_dump_json(exclude={"devices"}))
    console.rule("3. evaluate against the heuristics: dgx8x8, an EDF queue, job lengths spread 100-fold, PAC-ML's graphs, 2 seeds")
    policies = (["learned"] if learned else []) + ["para_min+best_fit", "lean", "lean@edf", "lean:admit=0.9"]
    config = EvaluationConfig(
        cluster="dgx8x8",
        graphs=list(PACML_GRAPHS),
        beta_dists=["A", "B", "C", "D"],
        load=0.9,
        jobs=jobs,
        seeds=2,
        policies=policies,
        policy_file=str(shipped) if learned else None,
        queue="edf-bf",
        size="loguniform:0.1:10",
    )
    with progress_bar() as bar:
        task = bar.add_task("simulating", total=total_decisions(config))
        result = run_evaluation(config, on_job=lambda: bar.advance(task))
    paths = write_results(result, out) + plot_all(result, out)
    console.print(summary_table(result))
    console.print("wrote " + ", ".join(str(p) for p in paths))


@app.command()
def serve(
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    policy_file: Annotated[Path | None, typer.Option(help="trained policy file (default: the lean heuristic)")] = None,
    heuristic: Annotated[str, typer.Option(help="heuristic used when no policy file is given")] = "lean",
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8000,
    max_body_mb: Annotated[float, typer.Option(help="largest request body in MiB")] = 32.0,
    max_graph_ops: Annotated[int, typer.Option(min=1, help="largest job graph accepted, in ops (forward + backward)")] = 200_000,
    state: Annotated[Path | None, typer.Option(help="SQLite file of reservations (default: .placer/<cluster>.sqlite3)")] = None,
    memory_only: Annotated[bool, typer.Option("--memory-only", help="keep reservations in memory: a restart forgets them")] = False,
) -> None:
    """Serve placement queries over HTTP, tracking which devices are reserved (durably, in --state)."""
    import uvicorn

    from placer.policy import PolicyContext, make_policy
    from placer.service import create_app

    topology = load_cluster(cluster)
    context = PolicyContext(topology, policy_file=policy_file)
    policy = make_policy("learned" if policy_file else heuristic, context)
    state_path = None if memory_only else (state or Path(".placer") / f"{topology.name}.sqlite3")
    app_ = create_app(topology, policy, max_body_bytes=int(max_body_mb * 1024 * 1024), max_graph_ops=max_graph_ops, state_path=state_path)
    restored = len(app_.state.occupancy.jobs)
    where = f"reservations in {state_path} ({restored} restored)" if state_path else "reservations in memory only"
    err_console.print(f"placer serve: cluster {topology.name}, policy {policy.name or 'learned'}, {where}, on http://{host}:{port}")
    uvicorn.run(app_, host=host, port=port, log_level="info", access_log=True)


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="evaluation folders (with results.json) or the files; several: the same streams")],
    plots: Annotated[bool, typer.Option(help="also redraw the PNG plots beside results.json")] = False,
    against: Annotated[str | None, typer.Option(help="also print each policy's blocking rate minus this policy's, paired by seed")] = None,
) -> None:
    """Print an evaluation's summary as a markdown table (blocking rate and throughput, mean ± 95% CI).

    Several evaluations of the same job streams (equal settings but for the policies, e.g. a new
    policy against baselines evaluated before) are reported as one; --plots writes beside the first.
    """
    import json

    from placer.evaluation import EvaluationConfig, EvaluationResult, merge_results

    loaded = []
    for folder in results:
        path = folder / "results.json" if folder.is_dir() else folder
        try:
            data = json.loads(path.read_text())
            loaded.append(EvaluationResult(EvaluationConfig.model_validate(data["record"]["config"]), data["runs"]))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            raise PlacerError(f"{path}: not an evaluation results file ({type(exc).__name__})") from None
        loaded[-1].timelines = _timelines(path.parent / "timelines.json") if plots else []
    result = merge_results(loaded)
    path = results[0] / "results.json" if results[0].is_dir() else results[0]
    if plots:
        from placer.plots import plot_all

        err_console.print("wrote " + ", ".join(str(p) for p in plot_all(result, path.parent)))
    rows = result.summary()
    if result.config.trace:
        jobs = result.runs[0]["jobs"] if result.runs else 0
        typer.echo(f"{result.config.cluster}, trace {result.config.trace} ({jobs} jobs), {result.config.strategy} cost model\n")
    else:
        typer.echo(
            f"{result.config.cluster}, load {result.config.load}, queue {result.config.queue}, size {result.config.size}, "
            f"{result.config.jobs} jobs x {result.config.seeds} seeds, "
            f"{result.config.strategy} cost model, graphs: {', '.join(result.config.graphs) or result.config.graphs_dir}\n"
        )
    typer.echo(
        "| policy | "
        + " | ".join(f"beta {b} blocking" for b in result.config.beta_dists)
        + " | "
        + " | ".join(f"beta {b} jobs/h" for b in result.config.beta_dists)
        + " |"
    )
    typer.echo("|---|" + "---:|" * (2 * len(result.config.beta_dists)))
    for policy in result.config.policies:
        cells = {r["beta_dist"]: r for r in rows if r["policy"] == policy}
        best = {b: min(r["blocking_rate"] for r in rows if r["beta_dist"] == b) for b in result.config.beta_dists}
        blocking = [
            (f"**{cells[b]['blocking_rate']:.3f}**" if cells[b]["blocking_rate"] == best[b] else f"{cells[b]['blocking_rate']:.3f}")
            + f" ± {cells[b]['blocking_rate_ci95']:.3f}"
            for b in result.config.beta_dists
        ]
        throughput = [
            f"{cells[b]['throughput_jobs_per_hour']:.1f} ± {cells[b]['throughput_jobs_per_hour_ci95']:.1f}"
            for b in result.config.beta_dists
        ]
        typer.echo(f"| {policy} | " + " | ".join(blocking + throughput) + " |")
    if against is not None:
        _paired_table(result, rows, against)
    _deviations_table(result)


def _timelines(path: Path) -> list[dict]:
    import json

    try:
        return json.loads(path.read_text()) if path.exists() else []
    except json.JSONDecodeError:
        raise PlacerError(f"{path}: not valid JSON") from None


def _paired_table(result, rows, against: str) -> None:
    if against not in result.config.policies:
        raise PlacerError(f"--against {against!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_dists
    typer.echo(f"\nBlocking rate minus {against}'s on the same job streams (mean ± 95% CI over seeds; relative change):\n")
    typer.echo("| policy | " + " | ".join(f"beta {b}" for b in betas) + " |")
    typer.echo("|---|" + "---:|" * len(betas))
    base = {r["beta_dist"]: r["blocking_rate"] for r in rows if r["policy"] == against}
    for policy in result.config.policies:
        if policy == against:
            continue
        cells = []
        for b in betas:
            mean, half = result.paired(policy, against, b)
            relative = f" ({mean / base[b]:+.0%})" if base[b] > 0 else ""
            cells.append(f"{mean:+.3f} ± {half:.3f}{relative}")
        typer.echo(f"| {policy} | " + " | ".join(cells) + " |")


def _deviations_table(result) -> None:
    """For planners that count them: the share of offers where they left their base rule, by kind (summed over seeds)."""
    from collections import Counter

    planners = [p for p in result.config.policies if any("policy_stats" in r for r in result.runs if r["policy"] == p)]
    if not planners:
        return
    betas = result.config.beta_dists
    typer.echo("\nOffers where a planner left its base rule (all seeds; by kind):\n")
    typer.echo("| policy | " + " | ".join(f"beta {b}" for b in betas) + " |")
    typer.echo("|---|" + "---:|" * len(betas))
    for policy in planners:
        cells = []
        for b in betas:
            stats = [r["policy_stats"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == b and "policy_stats" in r]
            offers = sum(s["offers"] for s in stats)
            kinds = sum((Counter(s["deviations"]) for s in stats), Counter())
            share = f"{kinds.total() / offers:.1%}" if offers else "-"
            cells.append(f"{share} of {offers} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")")
        typer.echo(f"| {policy} | " + " | ".join(cells) + " |")


@import_app.command("pipedream")
def import_pipedream(
    file: Annotated[Path, typer.Argument(help="PipeDream graph.txt profile")],
    out: Annotated[Path, typer.Option(help="job graph JSON to write")],
    name: Annotated[str | None, typer.Option(help="graph name (default: the file's stem)")] = None,
    iterations: Annotated[int, typer.Option(help="training iterations of one job")] = 1000,
    batch_size: Annotated[int | None, typer.Option(help="samples per minibatch (default: read from the Input op's image tensor)")] = None,
) -> None:
    """Convert a PipeDream profile into a training job graph (forward + mirrored backward)."""
    from placer.pipedream import load_pipedream

    graph = load_pipedream(file, name=name, iterations=iterations, batch_size=batch_size)
    graph.to_json(out)
    console.print(
        f"wrote {out}: {graph.num_ops} ops, {graph.num_edges} edges, {graph.sequential_iteration_s:.3f} s per iteration, "
        f"batch {graph.batch_size}, profiled on {graph.profiled_on}"
    )


@import_app.command("trace")
def import_trace(
    kind: Annotated[str, typer.Argument(help="gavel or philly")],
    file: Annotated[Path, typer.Argument(help="the trace file (see data/traces/)")],
    out: Annotated[Path, typer.Option(help="CSV to write (arrival_s,graph,beta,iterations), for evaluate --trace")],
    beta_dist: Annotated[str, typer.Option(help="gavel: deadlines drawn from this beta distribution")] = "C",
    seed: Annotated[int, typer.Option(help="gavel: seed of the beta draws")] = 0,
    cluster: Annotated[str, typer.Option(help="philly: cluster whose sequential times set the iterations")] = "dgx8x8",
    graphs: Annotated[str, typer.Option(help="philly: graphs to bucket jobs into by GPU time")] = ",".join(PACML_GRAPHS),
    vc: Annotated[str | None, typer.Option(help="philly: only this virtual cluster")] = None,
    start: Annotated[str | None, typer.Option(help="philly: first timestamp, e.g. 2017-10-09")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="philly: at most this many jobs")] = None,
) -> None:
    """Convert a public GPU-cluster trace into a replayable job trace (rules in placer/traces.py)."""
    import numpy as np

    from placer.cost import CostModel
    from placer.traces import convert_gavel, convert_philly, write_trace
    from placer.workload import BetaDistribution

    if kind == "gavel":
        rows = convert_gavel(file, BetaDistribution(beta_dist), np.random.default_rng(seed))
    elif kind == "philly":
        cost = CostModel(load_cluster(cluster))
        rows = convert_philly(file, [resolve_graph(g) for g in _split(graphs)], cost.sequential_iteration_s, vc=vc, start=start, jobs=jobs)
    else:
        raise PlacerError(f"unknown trace kind {kind!r}: use gavel or philly")
    write_trace(rows, out)
    span = rows[-1].arrival_s - rows[0].arrival_s
    console.print(f"wrote {out}: {len(rows)} jobs over {span / 3600:.1f} h, {len({r.graph for r in rows})} distinct graphs")


@import_app.command("torch")
def import_torch(
    factory: Annotated[str, typer.Argument(help="MODULE:FACTORY; FACTORY() returns a model, or (model, example_inputs)")],
    out: Annotated[Path, typer.Option(help="job graph JSON to write")],
    input_shape: Annotated[list[str] | None, typer.Option(help="shape of a random float input, e.g. 8,3,224,224 (repeatable)")] = None,
    device_type: Annotated[str, typer.Option(help="device model for compute times (A100-80GB, H100-SXM, V100-16GB)")] = "A100-80GB",
    iterations: Annotated[int, typer.Option(help="training iterations of one job")] = 1000,
    name: Annotated[str | None, typer.Option(help="graph name (default: FACTORY)")] = None,
) -> None:
    """Export a PyTorch model with torch.export and write its training job graph."""
    import importlib
    import os

    try:
        import torch

        from placer.torch_graph import from_torch
    except ImportError as exc:
        raise PlacerError(f"'placer import torch' needs torch: {exc} (pip install -e '.[torch]')") from None
    module_name, _, attr = factory.partition(":")
    if not module_name or not attr:
        raise PlacerError(f"expected MODULE:FACTORY, got {factory!r}")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error at import is theirs to see, in one line
        raise PlacerError(f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(module, attr, None)):
        raise PlacerError(f"module {module_name!r} has no callable {attr!r}")
    try:
        built = getattr(module, attr)()
    except Exception as exc:  # the user's factory failed: say where, not a traceback of ours
        raise PlacerError(f"{factory}() raised {type(exc).__name__}: {exc}") from None
    model, inputs = built if isinstance(built, tuple) else (built, None)
    if input_shape:
        try:
            shapes = [tuple(int(d) for d in shape.split(",")) for shape in input_shape]
        except ValueError:
            raise PlacerError(f"bad --input-shape {input_shape!r}: use comma-separated integers like 8,3,224,224") from None
        generator = torch.Generator().manual_seed(0)
        inputs = tuple(torch.randn(shape, generator=generator) for shape in shapes)
    if inputs is None:
        raise PlacerError(f"{factory} returned no example inputs: give --input-shape")
    graph = from_torch(model, inputs, device_type=device_type, iterations=iterations, name=name or attr)
    graph.to_json(out)
    console.print(
        f"wrote {out}: {graph.num_ops} ops, {graph.forward_flops:.3g} FLOP forward, "
        f"{graph.sequential_iteration_s:.3g} s per iteration on {device_type}"
    )


@app.command("graphs")
def list_graphs() -> None:
    """List the shipped job graphs."""
    table = Table("graph", "ops", "edges", "s/iteration", "params (MB)", "activations (GB)", "iterations")
    for name in shipped_graph_names():
        g = resolve_graph(name)
        table.add_row(
            name,
            str(g.num_ops),
            str(g.num_edges),
            f"{g.sequential_iteration_s:.3f}",
            f"{g.parameter_bytes / 1e6:.0f}",
            f"{g.activation_bytes / 1e9:.1f}",
            str(g.iterations),
        )
    console.print(table)


@app.command("clusters")
def list_clusters() -> None:
    """List the cluster presets."""
    table = Table("preset", "servers", "devices", "device types", "intra GB/s", "inter GB/s")
    for name in preset_names():
        c = load_cluster(name)
        links = c.spec.links
        table.add_row(
            name,
            str(c.num_servers),
            str(c.num_devices),
            ", ".join(sorted(set(c.device_type))),
            f"{links.intra_server.bandwidth_Bps / 1e9:.0f}",
            f"{links.inter_server.bandwidth_Bps / 1e9:.0f}",
        )
    console.print(table)


def _register_plugins() -> None:
    for ep in entry_points(group="placer.cli"):
        try:
            register = ep.load()
        except ImportError:
            continue  # optional packages missing: the command is simply absent
        register(app)


def main() -> None:
    _register_plugins()
    try:
        app(standalone_mode=False)
    except PlacerError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except ValidationError as exc:
        err = exc.errors()[0]
        err_console.print(f"[red]error:[/red] {'.'.join(map(str, err['loc']))}: {err['msg']}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(getattr(exc, "exit_code", getattr(exc, "code", 0)))
    except Exception as exc:  # click's usage errors (typer ships its own click, so match the protocol, not the class)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        if not (hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)):
            raise
        message = " ".join(exc.format_message().split()) or "see 'placer --help'"
        command = getattr(getattr(exc, "ctx", None), "command_path", "placer")
        err_console.print(f"[red]error:[/red] {message} (see '{command} --help')", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
