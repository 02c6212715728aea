"""``placer serve``: the HTTP placement service."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from placer.cli.app import app, err_console
from placer.cluster.topology import load_cluster


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

    from placer.baselines.registry import PolicyContext, make_policy
    from placer.serve.http import create_app

    topology = load_cluster(cluster)
    context = PolicyContext(topology, policy_file=policy_file)
    policy = make_policy("learned" if policy_file else heuristic, context)
    state_path = None if memory_only else (state or Path(".placer") / f"{topology.name}.sqlite3")
    app_ = create_app(topology, policy, max_body_bytes=int(max_body_mb * 1024 * 1024), max_graph_ops=max_graph_ops, state_path=state_path)
    restored = len(app_.state.occupancy.jobs)
    where = f"reservations in {state_path} ({restored} restored)" if state_path else "reservations in memory only"
    err_console.print(f"placer serve: cluster {topology.name}, policy {policy.name or 'learned'}, {where}, on http://{host}:{port}")
    uvicorn.run(app_, host=host, port=port, log_level="info", access_log=True)
