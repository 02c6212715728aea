"""``placer graphs`` and ``placer clusters``: what ships."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from placer.cli.app import app, console
from placer.cli.tables import terminal_table
from placer.cluster.topology import load_cluster, preset_names
from placer.common.errors import UsageError
from placer.graphs.catalog import resolve_graph, shipped_graph_names


@app.command("graphs")
def list_graphs() -> None:
    """List the shipped job graphs."""
    console.print(graphs_table())


def graphs_table(width: int | None = None) -> Table:
    """The shipped graphs, a row each, every name whole within ``width`` columns (default: the terminal's)."""
    header = ["graph", "ops", "edges", "s/iter", "params MB", "activ. GB", "iters"]
    rows = []
    for name in shipped_graph_names():
        g = resolve_graph(name)
        rows.append(
            [
                name,
                str(g.num_ops),
                str(g.num_edges),
                f"{g.sequential_iteration_s:.3g}",
                f"{g.parameter_bytes / 1e6:.0f}",
                f"{g.activation_bytes / 1e9:.1f}",
                str(g.iterations),
            ]
        )
    return terminal_table(header, rows, width=width or console.width)


@app.command("clusters")
def list_clusters(
    action: Annotated[str | None, typer.Argument(help="check: read FILE as a cluster file and show what placer makes of it")] = None,
    file: Annotated[Path | None, typer.Argument(help="the cluster file to check (docs/clusters.md lists its keys)")] = None,
) -> None:
    """List the cluster presets; ``placer clusters check FILE`` reads a cluster file (one line for a mistake) and shows it."""
    if action is not None and (action != "check" or file is None):
        raise UsageError("usage: placer clusters (the presets) or placer clusters check FILE")
    table = Table("cluster", "servers", "devices", "device types", "intra GB/s", "inter GB/s")
    for name in [str(file)] if file is not None else preset_names():
        c = load_cluster(name)
        links = c.spec.links
        table.add_row(
            c.name if file is not None else name,
            str(c.num_servers),
            str(c.num_devices),
            ", ".join(sorted(set(c.device_type))),
            f"{links.intra_server.bandwidth_Bps / 1e9:.0f}",
            f"{links.inter_server.bandwidth_Bps / 1e9:.0f}",
        )
    console.print(table)
    if file is not None:
        console.print(
            f"{file}: a valid cluster file ({load_cluster(file).num_devices} devices); evaluate it with "
            f"placer evaluate --cluster {file} --policies learned,best"
        )
