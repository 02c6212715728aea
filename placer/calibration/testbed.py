"""A synthetic testbed whose truth is known: does a calibration on few small placements extrapolate?

The nominal cluster is ``data/clusters/testbeds/t4x16.toml`` (16 servers x 4 T4, 50 Gb/s
Ethernet). The truth differs from it as real clusters do (:data:`TRUTH`): the all-reduce between
servers reaches 1/10 of line rate with 50 us per message (nominal 30 us), PCIe peer-to-peer half
its nominal rate, a 5 ms per-step overhead for a job spread over devices, and per job its own
compute rate and fixed per-step cost. Step times are the cost model's at the truth, times a
deterministic +-3 % noise (seeded). Jobs keep their per-GPU batch (weak scaling), as data-parallel
training does.

Calibration, per model (ResNet-50 and BERT-base, two per-GPU batches each): 1 GPU; 4 GPUs in one
server; 2 servers x 1 GPU; 2 servers x 2 GPUs. Held out: every other (servers, GPUs per server)
shape up to 16 servers x 4 GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placer.calibration.fit import Calibration, fit_calibration
from placer.calibration.measurements import read_measurements
from placer.cluster.topology import Cluster, load_cluster, parse_cluster_spec
from placer.common.shipped import data_dir
from placer.cost.model import CostModel

PER_GPU_BATCH = {"resnet50": (32, 64), "bert_base": (4, 8)}
TRUTH = {
    ("links", "inter_server", "bandwidth_Bps"): 6.25e9 / 10,
    ("links", "inter_server", "latency_s"): 50e-6,
    ("links", "intra_server", "bandwidth_Bps"): 6e9,
    ("overheads", "sync_s"): 0.005,
    ("jobs", "resnet50", "compute_scale"): 0.8,
    ("jobs", "resnet50", "iteration_s"): 0.01,
    ("jobs", "bert_base", "compute_scale"): 0.6,
    ("jobs", "bert_base", "iteration_s"): 0.02,
}
CALIBRATION_SHAPES = ((1, 1), (1, 4), (2, 1), (2, 2))  # (servers, GPUs per server)
HELD_OUT_SERVERS = (1, 2, 3, 4, 6, 8, 12, 16)
NOISE = 0.03
SEED = 7


def nominal_cluster() -> Cluster:
    return load_cluster(data_dir() / "clusters" / "testbeds" / "t4x16.toml")


def true_cluster(changes: dict[tuple[str, ...], float] = TRUTH) -> Cluster:
    """The nominal cluster with ``changes`` (path -> value) applied."""
    data = nominal_cluster().spec.model_dump()
    for keys, value in changes.items():
        node = data
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return Cluster(parse_cluster_spec(data, source="synthetic testbed truth"))


def rows(shapes, truth: Cluster, rng: np.random.Generator, noise: float = NOISE) -> list[dict]:
    """Measurement rows (dicts) of every model and per-GPU batch on each (servers, GPUs per server) shape."""
    model, out = CostModel(truth), []
    from placer.graphs.catalog import resolve_graph

    for name, batches in PER_GPU_BATCH.items():
        base = resolve_graph(name).with_precision("fp16")
        for per_gpu in batches:
            for servers, per_server in shapes:
                devices = [f"s{s}-g{g}" for s in range(servers) for g in range(per_server)]
                graph = base.with_batch_size(per_gpu * len(devices))
                ids = [truth.device_index[d] for d in devices]
                step = model.predict(graph, ids, "dp").iteration_s * (1 + rng.uniform(-noise, noise))
                row = {"graph": name, "devices": devices, "batch_size": graph.batch_size, "precision": "fp16"}
                out.append(row | {"step_time_s": step, "strategy": "dp"})
    return out


@dataclass(frozen=True)
class TestbedValidation:
    calibration: Calibration
    held_out: list[dict]
    nominal_errors: np.ndarray  # predicted / measured - 1 on held-out rows
    calibrated_errors: np.ndarray

    def summary(self, min_servers: int = 1) -> dict[str, float]:
        """Held-out rows on at least ``min_servers`` servers: count, median and 90th percentile |error|, nominal and calibrated."""
        keep = np.array([len({d.split("-")[0] for d in r["devices"]}) >= min_servers for r in self.held_out])
        nominal, calibrated = np.abs(self.nominal_errors[keep]), np.abs(self.calibrated_errors[keep])
        return {
            "rows": int(keep.sum()),
            "nominal_median": float(np.median(nominal)),
            "nominal_p90": float(np.percentile(nominal, 90)),
            "median": float(np.median(calibrated)),
            "p90": float(np.percentile(calibrated, 90)),
            "max": float(calibrated.max()),
        }


def validate_on_testbed(truth: Cluster | None = None, seed: int = SEED, noise: float = NOISE) -> TestbedValidation:
    """Calibrate the nominal cluster on :data:`CALIBRATION_SHAPES`, predict every other shape (module docstring)."""
    truth = truth or true_cluster()
    rng = np.random.default_rng(seed)
    nominal = nominal_cluster()
    calibration = fit_calibration(nominal, rows(CALIBRATION_SHAPES, truth, rng, noise), cross_validate=True)
    per_server = nominal.max_devices_per_server
    shapes = [(s, c) for s in HELD_OUT_SERVERS for c in (1, 2, per_server) if (s, c) not in CALIBRATION_SHAPES]
    held = rows(shapes, truth, rng, noise)
    measured = read_measurements(held, nominal)
    errors = lambda model: np.array([model.predict(r.graph, r.devices, r.strategy).iteration_s / r.step_time_s - 1 for r in measured])  # noqa: E731
    return TestbedValidation(calibration, held, errors(CostModel(nominal)), errors(CostModel(calibration.cluster)))
