"""Validation on Gavel's measured throughputs (``data/measured/gavel_throughputs.csv``).

Gavel (Narayanan et al., OSDI 2020) measured its seven job types on K80, P100 and V100 GPUs at
1, 2, 4 and 8 GPUs, packed on as few servers as possible or spread one per server
(``_unconsolidated``). Reading its rows:

- ``batch_size`` is the batch of one worker: Gavel's distributed jobs keep it per GPU (weak
  scaling), so a job on ``g`` GPUs steps at a global batch of ``g x batch_size``;
- ``steps_per_s`` counts worker steps, summed over the workers (two spread K80s step 2.04x as
  often as one on ResNet-50 at batch 16: it cannot be one synchronous step at a time), so one
  synchronous iteration of ``g`` workers takes ``g / steps_per_s`` seconds;
- models ran in fp32 and data parallel (PyTorch DDP); a throughput of 0 (out of memory) is no
  measurement.

Graphs: Gavel's ResNet-18, Transformer, LM, Recommendation, A3C and CycleGAN are the shipped
``gavel_*`` graphs; ResNet-50 is the PipeDream ``resnet50``. Servers: the nominal specs in
``data/clusters/testbeds/gavel_*.toml`` (the CSV does not record the machines; those files say
what is assumed).

Calibration subset, per GPU type and model: one GPU at the smallest and at the largest batch,
four GPUs on one server and eight spread over servers at the middle batch: at most 4 rows per
model (Recommendation, measured on one GPU only, gives 2; A3C and CycleGAN, one row each, give
theirs and have none held out). Every other row is held out.

Extrapolation (:func:`validate_extrapolation`): calibrate on every row on one server and every
row spread over 2 servers, predict the rows spread over 4 and 8 servers (beyond any calibrated
shape).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from placer.calibration.fit import Calibration, fit_calibration
from placer.calibration.measurements import Row, read_measurements
from placer.cluster.topology import Cluster, load_cluster
from placer.common.shipped import data_dir
from placer.cost.model import CostModel

GPU_TYPES = ("k80", "p100", "v100")
GRAPHS = {
    "ResNet-18": "gavel_resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "gavel_transformer",
    "LM": "gavel_lm",
    "Recommendation": "gavel_recommendation",
    "A3C": "gavel_a3c",
    "CycleGAN": "gavel_cyclegan",
}


@dataclass(frozen=True)
class GavelRow:
    gpu: str
    model: str
    batch_size: int | None  # per worker
    gpus: int
    spread: bool
    step_time_s: float

    @property
    def kind(self) -> str:
        """``single`` (one GPU), ``packed`` (several on as few servers as possible) or ``spread`` (one per server)."""
        return "single" if self.gpus == 1 else "spread" if self.spread else "packed"

    def measurement(self, cluster: Cluster) -> dict:
        """As a calibration row on ``cluster`` (packed: server by server; spread: one GPU per server)."""
        per_server = cluster.max_devices_per_server
        if self.spread:
            devices = [f"s{i}-g0" for i in range(self.gpus)]
        else:
            devices = [f"s{i // per_server}-g{i % per_server}" for i in range(self.gpus)]
        batch = None if self.batch_size is None else self.batch_size * self.gpus
        return {
            "graph": GRAPHS[self.model],
            "devices": devices,
            "batch_size": batch,
            "precision": "fp32",
            "step_time_s": self.step_time_s,
            "strategy": "dp",
        }


def gavel_cluster(gpu: str) -> Cluster:
    return load_cluster(data_dir() / "clusters" / "testbeds" / f"gavel_{gpu}.toml")


def gavel_rows(gpu: str) -> list[GavelRow]:
    """Every measured row of one GPU type (a spread single GPU is the packed one: kept once)."""
    rows, seen = [], set()
    with open(data_dir() / "measured" / "gavel_throughputs.csv", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            kind, _, spread = r["gpu"].partition("_")
            steps, gpus = float(r["steps_per_s"]), int(r["gpus"])
            batch = int(r["batch_size"]) if r["batch_size"] else None
            key = (r["model"], batch, gpus, bool(spread) and gpus > 1)
            if kind != gpu or steps <= 0 or key in seen:
                continue
            seen.add(key)
            rows.append(GavelRow(kind, r["model"], batch, gpus, key[3], gpus / steps))
    return rows


def calibration_subset(rows: list[GavelRow]) -> tuple[list[GavelRow], list[GavelRow]]:
    """(calibration rows, held-out rows): the module docstring's choice."""
    chosen: list[GavelRow] = []
    for model in GRAPHS:
        mine = [r for r in rows if r.model == model]
        single = sorted((r for r in mine if r.gpus == 1), key=lambda r: r.batch_size or 0)
        multi = [r for r in mine if r.gpus > 1]
        batches = sorted({r.batch_size for r in multi if r.batch_size is not None})
        middle = batches[len(batches) // 2] if batches else None
        picks = [single[0], single[-1]] if single else []
        picks += [r for r in multi if r.batch_size == middle and ((r.gpus == 4 and not r.spread) or (r.gpus == 8 and r.spread))]
        chosen += list(dict.fromkeys(picks))
    return chosen, [r for r in rows if r not in chosen]


@dataclass(frozen=True)
class GavelValidation:
    gpu: str
    calibration: Calibration
    held_out: list[GavelRow]
    nominal_errors: np.ndarray  # predicted / measured - 1 on held-out rows
    calibrated_errors: np.ndarray

    def summary(self, kind: str = "all") -> dict[str, float]:
        """Held-out rows' median and 90th-percentile absolute error, nominal and calibrated.

        ``kind``: ``all``, ``single`` (one GPU), ``packed`` (several GPUs on as few servers as
        possible) or ``spread`` (one GPU per server).
        """
        keep = np.array([kind == "all" or kind == r.kind for r in self.held_out], dtype=bool)
        nominal, calibrated = np.abs(self.nominal_errors[keep]), np.abs(self.calibrated_errors[keep])
        stat = lambda values, q: float(np.percentile(values, q)) if len(values) else float("nan")  # noqa: E731
        return {
            "rows": int(keep.sum()),
            "nominal_median": stat(nominal, 50),
            "nominal_p90": stat(nominal, 90),
            "median": stat(calibrated, 50),
            "p90": stat(calibrated, 90),
        }


def validate_on_gavel(gpu: str) -> GavelValidation:
    """Calibrate ``gavel_<gpu>`` on the subset, predict the held-out rows before and after."""
    return _validate(gpu, *calibration_subset(gavel_rows(gpu)))


def validate_extrapolation(gpu: str) -> GavelValidation:
    """Calibrate ``gavel_<gpu>`` on the rows on one server or spread over 2, predict those spread over 4 and 8 (module docstring)."""
    rows = gavel_rows(gpu)
    near = [r for r in rows if not r.spread or r.gpus <= 2]
    return _validate(gpu, near, [r for r in rows if r not in near])


def _validate(gpu: str, chosen: list[GavelRow], held: list[GavelRow]) -> GavelValidation:
    cluster = gavel_cluster(gpu)
    calibration = fit_calibration(cluster, [r.measurement(cluster) for r in chosen], cross_validate=False)
    measured = read_measurements([r.measurement(cluster) for r in held], cluster)  # device ids hold on the calibrated cluster too
    return GavelValidation(gpu, calibration, held, _errors(CostModel(cluster), measured), _errors(CostModel(calibration.cluster), measured))


def _errors(model: CostModel, rows: list[Row]) -> np.ndarray:
    return np.array([model.predict(r.graph, r.devices, r.strategy).iteration_s / r.step_time_s - 1 for r in rows])
