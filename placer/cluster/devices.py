"""Device models: peak FLOP/s per precision, memory bandwidth, and sustained efficiencies.

Two uses:

- **Import** (:mod:`placer.graphs.torch_import`): an op of ``F`` FLOPs moving ``B`` bytes takes
  ``max(F / (peak_bf16 * flops_efficiency), B / (memory_bandwidth * bandwidth_efficiency))`` s
  (roofline; 0.5 and 0.7 are typical sustained fractions for transformer training kernels).
- **Rescaling** (:mod:`placer.cost.profile`): a graph records the device and precision it was
  profiled on; its op times move to the placed device by the ratio of sustained rates. A
  matmul-class op (convolution, linear, LSTM, batched matmul) scales with
  ``peak(precision) * matmul_efficiency(precision)``; any other op is bandwidth-bound and
  scales with ``memory_bandwidth`` and the bytes per element of the precision.

Precisions: ``fp32`` (no tensor cores), ``tf32`` (fp32 storage, TF32 tensor-core matmuls;
falls back to fp32 on devices without TF32), ``bf16`` and ``fp16`` (mixed precision: 2-byte
activations, 16-bit tensor-core matmuls; a device without bf16 runs fp16).

Peaks are dense (no sparsity) vendor datasheet figures, per GPU (NVIDIA V100, A100 and H100 SXM
datasheets; P40, K80 (one GK210 of the two on a board, boost clock), P100 PCIe, T4, A10 and L4
from theirs). Matmul efficiencies: V100 fp32 0.35 is what the PipeDream
ResNet-50 profile itself sustains in its convolutions (12.3 GFLOP per image x 128 images in
284.7 ms = 5.5 TFLOP/s of 15.7); A100 tf32 and bf16 are calibrated so that the ResNet-50
profile, moved to an A100, runs at NVIDIA's published 938 (TF32) and 2,470 (AMP) images/s
(the repository's fidelity study shows the fit). H100, P40 and 16-bit V100 efficiencies are assumed
equal to their A100 / V100 counterparts (not calibrated); so are those of K80, P100 and T4 (as the
V100: fp32 0.35, 16-bit tensor cores 0.35) and A10 and L4 (as the A100). They are catalogue
defaults: ``placer calibrate`` fits a cluster's real rate from measured step times
(:mod:`placer.calibration`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.common.errors import ClusterError

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
BYTES_PER_ELEMENT = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class DeviceModel:
    name: str
    peak_flops: float  # dense bf16/fp16 tensor-core FLOP/s (the roofline's peak for import)
    memory_bandwidth_Bps: float  # bytes/s
    flops_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.7
    memory_bytes: float = 80e9
    peaks: dict[str, float] = field(default_factory=dict)  # precision -> dense FLOP/s
    matmul_efficiency: dict[str, float] = field(default_factory=dict)  # precision -> sustained fraction

    def op_seconds(self, flops: float, bytes_moved: float) -> float:
        return max(flops / (self.peak_flops * self.flops_efficiency), bytes_moved / (self.memory_bandwidth_Bps * self.bandwidth_efficiency))

    def effective_precision(self, precision: str) -> str:
        """The precision this device really runs ``precision`` in (tf32 -> fp32, bf16 <-> fp16, else fp32, where missing)."""
        if precision not in PRECISIONS:
            raise ClusterError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
        fallbacks = {"tf32": ("tf32", "fp32"), "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16")}.get(precision, (precision,))
        return next((p for p in fallbacks if p in self.peaks), "fp32")

    def matmul_rate(self, precision: str) -> float:
        """Sustained FLOP/s of matmul-class ops in ``precision``."""
        p = self.effective_precision(precision)
        return self.peaks[p] * self.matmul_efficiency[p]

    def max_compute_scale(self) -> float:
        """The largest factor its sustained matmul rates can be scaled by before one exceeds its peak."""
        return min(1.0 / e for e in self.matmul_efficiency.values())

    def memory_rate(self, precision: str) -> float:
        """Elements per second a bandwidth-bound op streams in ``precision``."""
        return self.memory_bandwidth_Bps * self.bandwidth_efficiency / BYTES_PER_ELEMENT[precision]


_V100_EFF = {"fp32": 0.35, "fp16": 0.35}
# Calibrated on ResNet-50 (NVIDIA DeepLearningExamples, 1 x A100 80GB: 938 img/s TF32, 2,470 AMP).
_A100_EFF = {"fp32": 0.35, "tf32": 0.151, "bf16": 0.2987, "fp16": 0.2987}

DEVICE_MODELS = {
    "A100-80GB": DeviceModel(
        "A100-80GB",
        312e12,
        2.039e12,
        memory_bytes=80e9,
        peaks={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
        matmul_efficiency=_A100_EFF,
    ),
    "A100-40GB": DeviceModel(
        "A100-40GB",
        312e12,
        1.555e12,
        memory_bytes=40e9,
        peaks={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
        matmul_efficiency=_A100_EFF,
    ),
    "H100-SXM": DeviceModel(
        "H100-SXM",
        989e12,
        3.35e12,
        memory_bytes=80e9,
        peaks={"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12},
        matmul_efficiency=_A100_EFF,
    ),
    "V100-16GB": DeviceModel(
        "V100-16GB", 125e12, 0.9e12, memory_bytes=16e9, peaks={"fp32": 15.7e12, "fp16": 125e12}, matmul_efficiency=_V100_EFF
    ),
    "V100-32GB": DeviceModel(
        "V100-32GB", 125e12, 0.9e12, memory_bytes=32e9, peaks={"fp32": 15.7e12, "fp16": 125e12}, matmul_efficiency=_V100_EFF
    ),
    "P40": DeviceModel("P40", 11.8e12, 0.346e12, memory_bytes=24e9, peaks={"fp32": 11.8e12}, matmul_efficiency={"fp32": 0.35}),
    "K80": DeviceModel("K80", 4.37e12, 0.24e12, memory_bytes=12e9, peaks={"fp32": 4.37e12}, matmul_efficiency={"fp32": 0.35}),
    "P100": DeviceModel("P100", 18.7e12, 0.732e12, memory_bytes=16e9, peaks={"fp32": 9.3e12, "fp16": 18.7e12}, matmul_efficiency=_V100_EFF),
    "T4": DeviceModel("T4", 65e12, 0.32e12, memory_bytes=16e9, peaks={"fp32": 8.1e12, "fp16": 65e12}, matmul_efficiency=_V100_EFF),
    "A10": DeviceModel(
        "A10",
        125e12,
        0.6e12,
        memory_bytes=24e9,
        peaks={"fp32": 31.2e12, "tf32": 62.5e12, "bf16": 125e12, "fp16": 125e12},
        matmul_efficiency=_A100_EFF,
    ),
    "L4": DeviceModel(
        "L4",
        121e12,
        0.3e12,
        memory_bytes=24e9,
        peaks={"fp32": 30.3e12, "tf32": 60e12, "bf16": 121e12, "fp16": 121e12},
        matmul_efficiency=_A100_EFF,
    ),
}


def device_model(name: str) -> DeviceModel:
    if name not in DEVICE_MODELS:
        raise ClusterError(f"unknown device type {name!r} (known: {', '.join(DEVICE_MODELS)})")
    return DEVICE_MODELS[name]
