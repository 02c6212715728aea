"""Calibration: fit a cluster's cost-model constants to measured step times (:mod:`placer.calibration.fit`)."""

from placer.calibration.fit import Calibration, calibrate, fit_calibration
from placer.calibration.measurements import CalibrationError, Measurement, read_measurements
from placer.calibration.toml_writer import cluster_toml

__all__ = ["Calibration", "CalibrationError", "Measurement", "calibrate", "cluster_toml", "fit_calibration", "read_measurements"]
