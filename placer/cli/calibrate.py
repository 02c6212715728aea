"""``placer calibrate``: fit a cluster file's constants to measured step times.

    placer calibrate measurements.csv --cluster dgx8x8 --out calibrated.toml

The CSV's columns are ``graph,devices,batch_size,precision,step_time_s[,strategy]`` (see
:mod:`placer.calibration.measurements`); the file written is an ordinary cluster file, usable
wherever ``--cluster`` is, with a comment block saying what was fitted and how well. The table says
which constants the rows set and which the prior (:mod:`placer.calibration.priors`), and any on a
bound; the errors printed include the cross-validated one, each placement shape predicted by a
refit without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from placer.cli.app import app, console


@app.command()
def calibrate(
    measurements: Annotated[Path, typer.Argument(help="CSV of measured step times (graph, devices, batch_size, precision, step_time_s)")],
    cluster: Annotated[str, typer.Option(help="cluster preset name or TOML file the measurements were taken on")] = "dgx8x8",
    out: Annotated[Path, typer.Option(help="calibrated cluster file to write")] = Path("calibrated.toml"),
) -> None:
    """Fit link bandwidths and latencies, device and per-job compute rates and fixed overheads to measured step times."""
    from placer.calibration import cluster_toml, fit_calibration
    from placer.common.atomic import check_writable, write_atomic
    from placer.common.errors import PlacerError

    check_writable(out, what="calibrated cluster file")  # before the fit, not after it
    with console.status(f"fitting {measurements} ..."):
        result = fit_calibration(cluster, measurements)
    table = Table(title=f"{result.cluster.name}: {result.rows} measurements")
    for column in ("constant", "nominal", "fitted", "set by", "bound"):
        table.add_column(column, justify="right" if column in ("nominal", "fitted") else "left")
    for path, (nominal, fitted) in result.fitted.items():
        table.add_row(path, f"{nominal:.4g}", f"{fitted:.4g}", result.identified.get(path, ""), result.at_bound.get(path, ""))
    console.print(table)
    for line in result.outcome():
        console.print(line, highlight=False)
    try:
        write_atomic(out, cluster_toml(result.cluster.spec, result.report()))
    except OSError as exc:
        raise PlacerError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
    console.print(f"wrote {out}")
