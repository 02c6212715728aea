"""``placer calibrate``: fit a cluster file's constants to measured step times.

    placer calibrate measurements.csv --cluster dgx8x8 --out calibrated.toml

The CSV's columns are ``graph,devices,batch_size,precision,step_time_s[,strategy]`` (see
:mod:`placer.calibration.measurements`); the file written is an ordinary cluster file, usable
wherever ``--cluster`` is, with a comment block saying what was fitted and how well. The table says
which constants the rows set and which the prior (:mod:`placer.calibration.priors`), and any on a
bound; the errors printed include the cross-validated one, each placement shape predicted by a
refit without it. Rows that do not look measured on the cluster named (:mod:`placer.calibration.checks`)
get a warning, on stderr and in the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from placer.cli.app import app, console, warn
from placer.cli.options import INPUT_FILE, checked_cluster


@app.command()
def calibrate(
    measurements: Annotated[
        Path, typer.Argument(help="CSV of measured step times (graph, devices, batch_size, precision, step_time_s)", **INPUT_FILE)
    ],
    cluster: Annotated[
        str, typer.Option(help="cluster preset name or TOML file the measurements were taken on", callback=checked_cluster)
    ] = "dgx8x8",
    out: Annotated[Path, typer.Option(help="calibrated cluster file to write")] = Path("calibrated.toml"),
) -> None:
    """Fit link bandwidths and latencies, device and per-job compute rates and fixed overheads to measured step times."""
    from placer.calibration import cluster_toml, read_measurements
    from placer.calibration.checks import preset_warnings
    from placer.calibration.fit import fit_rows
    from placer.cluster.topology import load_cluster
    from placer.common.atomic import check_writable, write_atomic
    from placer.common.errors import OutputError

    check_writable(out, what="calibrated cluster file")  # before the fit, not after it
    base = load_cluster(cluster)
    rows = read_measurements(measurements, base)
    with console.status(f"fitting {measurements} ..."):
        result = fit_rows(base, rows, source=str(measurements))
    doubts = preset_warnings(base, rows, result)  # measurements of another cluster fit too: say when they show it
    table = Table(title=f"{result.cluster.name}: {result.rows} measurements")
    for column in ("constant", "nominal", "fitted", "set by", "bound"):
        table.add_column(column, justify="right" if column in ("nominal", "fitted") else "left")
    for path, (nominal, fitted) in result.fitted.items():
        table.add_row(path, f"{nominal:.4g}", f"{fitted:.4g}", result.identified.get(path, ""), result.at_bound.get(path, ""))
    console.print(table)
    for line in result.outcome():
        console.print(line, highlight=False)
    for line in doubts:
        warn(line)
    try:
        write_atomic(out, cluster_toml(result.cluster.spec, result.report() + [f"WARNING: {line}" for line in doubts]))
    except OSError as exc:
        raise OutputError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
    console.print(f"wrote {out}")
