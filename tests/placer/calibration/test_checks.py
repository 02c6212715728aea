"""Measurements calibrated against a cluster they were not taken on get a warning (issue 53, item 4)."""

from __future__ import annotations

import csv

import numpy as np
from typer.testing import CliRunner

from placer.calibration.checks import preset_warnings, repeat_spread
from placer.calibration.fit import fit_rows
from placer.calibration.measurements import read_measurements
from placer.calibration.testbed import CALIBRATION_SHAPES, SEED, nominal_cluster, rows, true_cluster
from placer.cli import app
from placer.cluster.topology import load_cluster


def measured_twice() -> list[dict]:
    """The synthetic testbed's rows (16 T4s), each placement measured twice (+-3 % noise each time)."""
    rng = np.random.default_rng(SEED)
    return rows(CALIBRATION_SHAPES, true_cluster(), rng) + rows(CALIBRATION_SHAPES, true_cluster(), rng)


def warnings_on(cluster, measured: list[dict]) -> list[str]:
    resolved = read_measurements(measured, cluster)
    return preset_warnings(cluster, resolved, fit_rows(cluster, resolved, cross_validate=False))


def test_rows_of_another_cluster_are_named_and_the_right_one_passes():
    measured = measured_twice()
    assert warnings_on(nominal_cluster(), measured) == []
    pace, spread = warnings_on(load_cluster("dgx8x8"), measured)  # T4 rows fitted to A100s: it runs, in-sample errors small
    assert pace.startswith("the measurements run 7.3x slower than dgx8x8's nominal constants predict (median row)")
    assert "taken on dgx8x8's A100-80GB?" in pace
    assert spread.startswith("the fit misses by ") and "far above the 2.3% by which repeated measurements differ" in spread


def test_the_spread_needs_repeated_measurements():
    cluster = nominal_cluster()
    once = measured_twice()[:16]
    assert repeat_spread(cluster, read_measurements(once, cluster)) is None
    assert 0.0 < repeat_spread(cluster, read_measurements(measured_twice(), cluster)) < 0.06  # +-3 % each


def test_calibrate_prints_the_warning_and_writes_it_into_the_file(tmp_path):
    path, out = tmp_path / "t4.csv", tmp_path / "calibrated.toml"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["graph", "devices", "batch_size", "precision", "step_time_s", "strategy"])
        writer.writeheader()
        writer.writerows(row | {"devices": " ".join(row["devices"])} for row in measured_twice()[:16])
    result = CliRunner().invoke(app, ["calibrate", str(path), "--cluster", "dgx8x8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    line = "the measurements run 7.3x slower than dgx8x8's nominal constants predict (median row)"
    assert f"warning: {line}" in " ".join(result.output.split())
    assert f"# WARNING: {line}" in out.read_text()
