"""Device models for turning FLOPs and bytes into seconds (roofline).

An op that performs ``F`` FLOPs and moves ``B`` bytes (inputs read + outputs written) takes
``max(F / (peak_flops * flops_efficiency), B / (memory_bandwidth * bandwidth_efficiency))``
seconds. Peaks are dense bf16 tensor-core FLOP/s and HBM bandwidth from vendor datasheets; the
efficiencies are typical sustained fractions for training kernels (0.5 and 0.7), not measured here.
"""

from __future__ import annotations

from dataclasses import dataclass

from placer.errors import PlacerError


@dataclass(frozen=True)
class DeviceModel:
    name: str
    peak_flops: float  # FLOP/s
    memory_bandwidth_Bps: float  # bytes/s
    flops_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.7

    def op_seconds(self, flops: float, bytes_moved: float) -> float:
        return max(flops / (self.peak_flops * self.flops_efficiency), bytes_moved / (self.memory_bandwidth_Bps * self.bandwidth_efficiency))


DEVICE_MODELS = {
    "A100-80GB": DeviceModel("A100-80GB", 312e12, 2.039e12),
    "H100-SXM": DeviceModel("H100-SXM", 989e12, 3.35e12),
    "V100-16GB": DeviceModel("V100-16GB", 125e12, 0.9e12),
}


def device_model(name: str) -> DeviceModel:
    if name not in DEVICE_MODELS:
        raise PlacerError(f"unknown device type {name!r} (known: {', '.join(DEVICE_MODELS)})")
    return DEVICE_MODELS[name]
