"""``placer import pipedream|trace|torch``: job graphs and traces from other formats."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from placer.cli.app import console, import_app, split_list
from placer.cluster.topology import load_cluster
from placer.common.errors import PlacerError
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph


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
    """Convert a public GPU-cluster trace into a replayable job trace (rules in placer/workloads/traces.py)."""
    import numpy as np

    from placer.cost import CostModel
    from placer.workloads.generator import BetaDistribution
    from placer.workloads.traces import convert_gavel, convert_philly, write_trace

    if kind == "gavel":
        rows = convert_gavel(file, BetaDistribution(beta_dist), np.random.default_rng(seed))
    elif kind == "philly":
        cost = CostModel(load_cluster(cluster))
        models = [resolve_graph(g) for g in split_list(graphs)]
        rows = convert_philly(file, models, cost.sequential_iteration_s, vc=vc, start=start, jobs=jobs)
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

        from placer.graphs.torch_import import from_torch
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
