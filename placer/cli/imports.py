"""``placer import pipedream|trace|torch``: job graphs and traces from other formats."""

from __future__ import annotations

import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from placer.cli.app import console, import_app, split_list, warn
from placer.cluster.topology import load_cluster
from placer.common.errors import GraphImportError, MissingDependencyError, UsageError
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph

if TYPE_CHECKING:
    from placer.workloads.traces.core import ImportReport, TraceRow
    from placer.workloads.traces.mapping import GraphMapping


@import_app.command("pipedream")
def import_pipedream(
    file: Annotated[Path, typer.Argument(help="PipeDream graph.txt profile")],
    out: Annotated[Path, typer.Option(help="job graph JSON to write")],
    name: Annotated[str | None, typer.Option(help="graph name (default: the file's stem)")] = None,
    iterations: Annotated[int, typer.Option(help="training iterations of one job")] = 1000,
    batch_size: Annotated[int | None, typer.Option(help="samples per minibatch (default: read from the Input op's image tensor)")] = None,
) -> None:
    """Convert a PipeDream profile into a training job graph (forward + mirrored backward)."""
    from placer.graphs.pipedream import load_pipedream

    graph = load_pipedream(file, name=name, iterations=iterations, batch_size=batch_size)
    graph.to_json(out)
    console.print(
        f"wrote {out}: {graph.num_ops} ops, {graph.num_edges} edges, {graph.sequential_iteration_s:.3f} s per iteration, "
        f"batch {graph.batch_size}, profiled on {graph.profiled_on}"
    )


TRACE_KINDS = "gavel, philly, philly-log, helios, pai, openb, acme, pollux"
# import trace's defaults: an importer that reads none of them refuses any other value
DEFAULT_BETA, DEFAULT_CLUSTER, DEFAULT_GRAPHS = "C", "dgx8x8", ",".join(PACML_GRAPHS)


@import_app.command("trace")
def import_trace(
    kind: Annotated[str, typer.Argument(help=f"trace format: {TRACE_KINDS}")],
    file: Annotated[Path, typer.Argument(help="the trace file (pai: the folder of its tables, or its job table); see docs/traces.md")],
    out: Annotated[Path, typer.Option(help="CSV to write (arrival_s,graph,beta,iterations), for evaluate --trace")],
    beta_dist: Annotated[str, typer.Option(help="deadlines drawn from this beta distribution (all but philly)")] = DEFAULT_BETA,
    seed: Annotated[int, typer.Option(min=0, help="seed of the beta draws")] = 0,
    cluster: Annotated[str, typer.Option(help="cluster whose sequential times set the iterations (all but gavel)")] = DEFAULT_CLUSTER,
    graphs: Annotated[str, typer.Option(help="graphs to bucket jobs into by GPU time (all but gavel)")] = DEFAULT_GRAPHS,
    by_name: Annotated[bool, typer.Option(help="a job naming a known model runs its graph (pollux, pai, acme)")] = True,
    vc: Annotated[str | None, typer.Option(help="only this virtual cluster (philly, philly-log, helios)")] = None,
    start: Annotated[str | None, typer.Option(help="first submission and arrival 0, e.g. 2017-10-09 (default: the first midnight)")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="at most this many jobs, the first submitted (every kind)")] = None,
) -> None:
    """Convert a public GPU-cluster trace into a replayable job trace and say what was kept, mapped and dropped."""
    import numpy as np

    from placer.workloads.generator import BetaDistribution
    from placer.workloads.traces import convert_gavel, write_trace
    from placer.workloads.traces.formats import trace_format

    vcs: Counter[str] = Counter()  # the kept jobs by virtual cluster, where the importer counts them (philly)
    unused = {
        "gavel": {"--cluster": cluster != DEFAULT_CLUSTER, "--graphs": graphs != DEFAULT_GRAPHS, "--no-by-name": not by_name},
        "philly": {"--beta-dist": beta_dist != DEFAULT_BETA, "--seed": seed != 0, "--no-by-name": not by_name},
    }.get(kind, {})
    if given := [flag for flag, differs in unused.items() if differs]:
        own = "maps each job to its own model's graph" if kind == "gavel" else "takes each job's deadline from its observed duration"
        raise UsageError(f"{kind}'s importer {own}: drop {', '.join(given)}")
    if kind == "gavel":
        if vc is not None or start is not None:  # its arrivals are hours from the trace's start: no calendar, no clusters
            raise UsageError(f"gavel's trace has no {'virtual clusters' if vc is not None else 'calendar'}: drop --vc and --start")
        rows = convert_gavel(file, BetaDistribution(beta_dist), np.random.default_rng(seed))[:jobs]
        report = _legacy_report(kind, rows, Counter(), "by name")
    else:
        if kind != "philly":
            trace_format(kind)  # an unknown kind is refused before the cluster and graphs load
        mapping = _mapping(cluster, graphs, by_name)
        rows, report = _import(kind, file, mapping, beta_dist, seed, vcs, vc=vc, start=start, jobs=jobs)
    write_trace(rows, out)
    span = rows[-1].arrival_s - rows[0].arrival_s
    console.print(f"wrote {out}: {len(rows)} jobs over {span / 3600:.1f} h, {len({r.graph for r in rows})} distinct graphs")
    console.print(_report_table(report, rows))
    from placer.workloads.traces.window import VC_KINDS

    say_window(out, cluster, kind in VC_KINDS and vc is None, vcs)


def say_window(trace: Path, cluster: str, offer_vc: bool = True, vcs: Counter[str] | None = None) -> None:
    """The replay trace's window in one line (:mod:`placer.workloads.traces.window`) on stdout, and a warning with what
    would make it meaningful (``offer_vc``: one virtual cluster among them) when most of its work is blocked whatever
    the policy."""
    from placer.workloads.traces.window import advice, describe

    window = describe(trace, cluster)
    console.print(window.line(), highlight=False, soft_wrap=True)
    if (line := advice(window, offer_vc, vcs)) is not None:
        warn(line)


def _mapping(cluster: str, graphs: str, by_name: bool) -> GraphMapping:
    from placer.cost import CostModel
    from placer.workloads.traces.mapping import GraphMapping, fastest_device

    loaded = load_cluster(cluster)
    models = tuple(resolve_graph(g) for g in split_list(graphs))
    return GraphMapping(models, CostModel(loaded).sequential_iteration_s, fastest_device(loaded.device_model), by_name=by_name)


def _import(
    kind: str, file: Path, mapping: GraphMapping, beta_dist: str, seed: int, vcs: Counter[str], **options: Any
) -> tuple[list[TraceRow], ImportReport]:
    from placer.workloads.generator import BetaDistribution
    from placer.workloads.traces import DeadlineRule, convert_philly, import_trace

    if kind != "philly":
        return import_trace(kind, file, mapping, DeadlineRule(BetaDistribution(beta_dist), seed), **options)
    dropped: Counter[str] = Counter()
    rows = convert_philly(file, mapping.graphs, mapping.sequential_iteration_s, dropped=dropped, vcs=vcs, **options)
    return rows, _legacy_report(kind, rows, dropped, "by GPU time")


def _legacy_report(kind: str, rows: list[TraceRow], dropped: Counter[str], rule: str) -> ImportReport:
    from placer.workloads.traces import ImportReport

    mapped = Counter((r.graph, rule) for r in rows)
    return ImportReport(kind, len(rows) + sum(dropped.values()), len(rows), dict(dropped.most_common()), dict(mapped.most_common()))


def _report_table(report: ImportReport, rows: list[TraceRow]) -> Table:
    """Rows read, kept, dropped (by reason) and mapped (by graph and rule); where arrival 0 stands."""
    table = Table("", "what", "jobs", title=f"{report.kind}: {report.rows} rows read, {report.kept} jobs kept")
    for reason, n in report.dropped.items():
        table.add_row("dropped", reason, str(n))
    for (graph, how), n in report.mapped.items():
        table.add_row("mapped", f"{graph} ({how})", str(n))
    if report.origin_s is not None:
        origin = datetime(1970, 1, 1) + timedelta(seconds=report.origin_s)
        first = timedelta(seconds=round(rows[0].arrival_s))
        table.caption = f"arrival 0 = {origin:%Y-%m-%d %H:%M:%S} on the trace's clock; first job {first} later"
    return table


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

        from placer.graphs.torch_import import from_torch
    except ImportError as exc:
        raise MissingDependencyError(f"'placer import torch' needs torch: {exc} (pip install -e '.[torch]')") from None
    module_name, _, attr = factory.partition(":")
    if not module_name or not attr:
        raise UsageError(f"expected MODULE:FACTORY, got {factory!r}")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error at import is theirs to see, in one line
        raise GraphImportError(f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(module, attr, None)):
        raise GraphImportError(f"module {module_name!r} has no callable {attr!r}")
    try:
        built = getattr(module, attr)()
    except Exception as exc:  # the user's factory failed: say where, not a traceback of ours
        raise GraphImportError(f"{factory}() raised {type(exc).__name__}: {exc}") from None
    model, inputs = built if isinstance(built, tuple) else (built, None)
    if input_shape:
        try:
            shapes = [tuple(int(d) for d in shape.split(",")) for shape in input_shape]
        except ValueError:
            raise UsageError(f"bad --input-shape {input_shape!r}: use comma-separated integers like 8,3,224,224") from None
        generator = torch.Generator().manual_seed(0)
        inputs = tuple(torch.randn(shape, generator=generator) for shape in shapes)
    if inputs is None:
        raise GraphImportError(f"{factory} returned no example inputs: give --input-shape")
    graph = from_torch(model, inputs, device_type=device_type, iterations=iterations, name=name or attr)
    graph.to_json(out)
    console.print(
        f"wrote {out}: {graph.num_ops} ops, {graph.forward_flops:.3g} FLOP forward, "
        f"{graph.sequential_iteration_s:.3g} s per iteration on {device_type}"
    )
