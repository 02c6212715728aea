"""``placer predict`` and ``placer place``: the cost model's prediction, and one placement decision, as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from placer.cli.app import app, split_list
from placer.cli.options import INPUT_FILE
from placer.common.errors import QueryError
from placer.common.textfile import read_text
from placer.graphs.catalog import resolve_graph


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
    from placer.api.query import predict as predict_placement

    if (degree is None) == (devices is None):
        raise QueryError("give exactly one of --degree or --devices")
    job = resolve_graph(graph)
    if precision is not None:
        job = job.with_precision(precision)
    if batch_size is not None:
        job = job.with_batch_size(batch_size)
    target = degree if degree is not None else split_list(devices or "")
    typer.echo(predict_placement(job, cluster, target, strategy=strategy, iterations=iterations).model_dump_json(indent=2))


@app.command()
def place(
    graph: Annotated[str, typer.Argument(help="job graph JSON file (or a shipped graph's name)")],
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file")] = "pacml",
    policy_file: Annotated[Path | None, typer.Option(help="trained policy file: decide with the learned policy", **INPUT_FILE)] = None,
    heuristic: Annotated[str | None, typer.Option(help="decide with this heuristic instead (default: lean)")] = None,
    beta: Annotated[float, typer.Option(help="deadline = beta x sequential JCT, beta in (0, 1]")] = 1.0,
    iterations: Annotated[int | None, typer.Option(min=1, help="training iterations (default: the graph's)")] = None,
    state: Annotated[Path | None, typer.Option(help='occupancy JSON: {"busy": {"s0-g0": seconds_until_free, ...}}')] = None,
) -> None:
    """Print the partitioning degree, devices and predicted JCT for one job, as JSON."""
    import json

    from placer.api.query import ClusterState
    from placer.api.query import place as decide_placement

    if policy_file and heuristic:
        raise QueryError("give --policy-file or --heuristic, not both")
    occupancy = None
    if state is not None:
        text = read_text(state, what="state")
        try:
            occupancy = ClusterState.model_validate(json.loads(text))
        except json.JSONDecodeError as exc:
            raise QueryError(f"{state}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
        except ValidationError as exc:
            error = exc.errors()[0]
            raise QueryError(f"{state}: {'.'.join(map(str, error['loc'])) or 'state'}: {error['msg']}") from None
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
