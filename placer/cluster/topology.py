"""Cluster specs (validated TOML) and the runtime topology built from them.

A spec names device types, groups of identical servers and two link classes::

    name = "pacml"
    [device_types.A100-80GB]
    memory_bytes = 80e9
    speed = 1.0              # compute speed relative to the reference device (the sipml model)
    model = "A100-80GB"      # device model in placer.cluster.devices (default: the type's name if known)
    [[servers]]
    count = 32
    devices_per_server = 1
    device_type = "A100-80GB"
    [links.intra_server]     # between devices of one server (NVLink)
    bandwidth_Bps = 300e9    # bytes per second, per device port
    latency_s = 1e-6
    [links.inter_server]     # each server's network interface
    bandwidth_Bps = 1.6e12
    latency_s = 1e-6
    kind = "infiniband"      # optional: nvlink, pcie, infiniband, roce, ethernet, optical (sets the default
                             # efficiency; on either link it opts the file into the communication terms below)
    efficiency = 0.9         # optional: delivered fraction of line rate (default: the kind's, LINK_EFFICIENCY; 1)
    [communication]          # optional; present (or a link kind): DDP bucket order and a flat ring over a shared NIC
    overlap = 1.0            # fraction of the bucket-order overlap of gradient all-reduces with backward realised
    [overheads]              # optional; 0 by default
    iteration_s = 0.0        # every iteration of every job (optimizer step, launches, input pipeline)
    sync_s = 0.0             # added to an iteration that spans more than one device
    [resize]                 # optional: what pausing a job to change its devices costs (elastic policies only)
    restart_s = 30.0         # seconds to stop, restart and rejoin the workers (Pollux's and ElasticFlow's simulators)
    checkpoint_Bps = 2e9     # bytes per second the training state is written and read back at
    [jobs.resnet50]          # optional, per job (graph name): what calibration measured
    compute_scale = 1.0      # factor on its predicted GPU rate
    iteration_s = 0.0        # seconds added to each of its iterations (launches, Python, input)
    [calibrated]             # optional, written by placer calibrate: the shapes it was fitted on
    rows = 16
    max_servers = 2          # predictions on more servers are flagged as extrapolated
    max_devices_per_server = 4
    cv_median = 0.02         # |error| with each placement shape left out (placer predict's interval)
    cv_p90 = 0.05

A device type may also carry ``compute_scale`` (default 1): a factor on its device model's
sustained matmul rates, as ``placer calibrate`` fits it from measured step times; it may not lift
a sustained rate above the model's datasheet peak.

Devices are numbered 0..N-1 server by server; :meth:`Cluster.device_name` gives
``s<server>-g<index>`` names.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from placer.cluster.devices import DEVICE_MODELS, device_model
from placer.common.errors import ClusterSpecError
from placer.common.shipped import data_dir
from placer.common.tomlfile import load_toml, validate


class DeviceType(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    memory_bytes: float = Field(gt=0, description="device memory in bytes")
    speed: float = Field(gt=0, description="compute speed relative to the reference device (1.0)")
    model: str | None = Field(None, description="device model name in placer.cluster.devices (peak FLOP/s, memory bandwidth)")
    compute_scale: float = Field(1.0, gt=0, description="factor on the device model's sustained matmul rates (fitted by calibrate)")

    @model_validator(mode="after")
    def _known_model(self) -> DeviceType:
        if self.model is not None and self.model not in DEVICE_MODELS:
            raise ValueError(f"unknown device model {self.model!r} (known: {', '.join(DEVICE_MODELS)})")
        limit = device_model(self.model).max_compute_scale() if self.model is not None else float("inf")
        if self.compute_scale > limit + 1e-9:
            raise ValueError(
                f"compute_scale {self.compute_scale:g} would run a {self.model} above its datasheet peak (at most {limit:.3g})"
            )
        return self


MAX_DEVICES = 1_000_000  # a cluster file beyond this is a typo, not a cluster (and would fill memory)


class ServerGroup(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    count: int = Field(ge=1, le=MAX_DEVICES)
    devices_per_server: int = Field(ge=1, le=MAX_DEVICES)
    device_type: str


LinkKind = Literal["nvlink", "pcie", "infiniband", "roce", "ethernet", "optical"]
LINK_EFFICIENCY: dict[str, float] = {  # default delivered / line rate per link kind (docs/model.md, "Communication")
    "nvlink": 1.0,
    "pcie": 1.0,
    "infiniband": 1.0,  # RDMA: NCCL's bus bandwidth reaches ~0.9-0.95 of line rate; 1 keeps the DGX rows as published
    "roce": 1.0,
    "optical": 1.0,
    "ethernet": 0.25,  # NCCL over TCP sockets: a fraction of line rate (a prior centre, not a measurement: calibrate)
}


class Link(BaseModel):
    """One link class. ``bandwidth_Bps`` is the line rate; what a collective gets is ``bandwidth_Bps x delivered``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    bandwidth_Bps: float = Field(gt=0, description="bytes per second (line rate)")
    latency_s: float = Field(ge=0, description="seconds per message")
    nics_per_server: int = Field(1, ge=1, description="inter_server only: network interfaces per server, each at bandwidth_Bps")
    kind: LinkKind | None = Field(None, description="link technology: sets the default efficiency (None: an ideal link, 1)")
    efficiency: float | None = Field(None, gt=0, le=1, description="delivered fraction of line rate (fitted by calibrate)")

    @property
    def delivered(self) -> float:
        """The fraction of ``bandwidth_Bps`` a collective gets: ``efficiency``, else its kind's default, else 1."""
        if self.efficiency is not None:
            return self.efficiency
        return LINK_EFFICIENCY[self.kind] if self.kind is not None else 1.0

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict:
        """A link without ``kind`` / ``efficiency`` dumps as before they existed (figure fingerprints hash the dump)."""
        data = handler(self)
        for key in ("kind", "efficiency"):
            if isinstance(data, dict) and data.get(key) is None:
                data.pop(key, None)
        return data


class Links(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    intra_server: Link
    inter_server: Link


class Overheads(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    iteration_s: float = Field(0.0, ge=0, le=60, description="seconds added to every iteration of every job")
    sync_s: float = Field(0.0, ge=0, le=60, description="seconds added to an iteration that spans more than one device")


class Communication(BaseModel):
    """How gradient all-reduces overlap the backward pass (docs/model.md, "Communication").

    ``overlap``: 1 hides each DDP bucket's all-reduce as far as bucket order allows (NCCL on its own stream), 0 hides
    none (all of it after the backward pass); in between, that fraction of the way (fitted by calibrate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    overlap: float = Field(1.0, ge=0, le=1, description="fraction of the bucket-order overlap realised")


RESTART_S = 30.0  # seconds per resize: Pollux's simulator charges 30 s, ElasticFlow's 27 s + 2 s + 2 (log2 n + 1) s (docs/model.md)
CHECKPOINT_BPS = 2e9  # bytes per second a checkpoint is written and read back at (one NVMe drive, docs/model.md)
STATE_BYTES_PER_PARAM_BYTE = 3.0  # a checkpoint holds fp32 weights and Adam's two moments: 12 bytes per parameter, 3 x param_bytes


class ResizeCost(BaseModel):
    """What pausing a running job to change its devices costs (checkpoint, restart, re-shard); only elastic policies
    resize (docs/model.md, "Elastic jobs")."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    restart_s: float = Field(RESTART_S, ge=0, le=3600, description="seconds to stop the workers, start them on the new devices and rejoin")
    checkpoint_Bps: float = Field(CHECKPOINT_BPS, gt=0, description="bytes per second the training state is written, then read back")

    def pause_s(self, parameter_bytes: float) -> float:
        """Seconds a job with ``parameter_bytes`` fp32 parameter bytes makes no progress when resized: the restart plus
        writing and reading back its checkpoint (weights and Adam's moments, 3 x ``parameter_bytes``)."""
        return self.restart_s + 2 * STATE_BYTES_PER_PARAM_BYTE * parameter_bytes / self.checkpoint_Bps


class JobCalibration(BaseModel):
    """Measured corrections for one job (graph name), as ``placer calibrate`` fits them."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    compute_scale: float = Field(1.0, gt=0, le=10, description="factor on the job's predicted GPU rate")
    iteration_s: float = Field(0.0, ge=0, le=60, description="seconds added to each of its iterations")


class CalibratedRange(BaseModel):
    """The placements a calibrated file's constants were fitted on, and how well they predicted shapes left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rows: int = Field(ge=1, description="measured step times fitted")
    max_servers: int = Field(ge=1, description="the most servers any of them spanned: predictions beyond extrapolate")
    max_devices_per_server: int = Field(ge=1, description="the most devices any of them used on one server")
    cv_median: float | None = Field(None, ge=0, description="median |error| with each placement shape left out of the fit")
    cv_p90: float | None = Field(None, ge=0, description="90th percentile of the same")


class ClusterSpec(BaseModel):
    """A validated cluster description (see the module docstring for the file format)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1)
    device_types: dict[str, DeviceType] = Field(min_length=1)
    servers: list[ServerGroup] = Field(min_length=1)
    links: Links
    overheads: Overheads = Overheads()
    jobs: dict[str, JobCalibration] = Field(default_factory=dict, description="per-job corrections, by graph name")
    calibrated: CalibratedRange | None = Field(None, description="written by placer calibrate: what the constants rest on")
    resize: ResizeCost | None = Field(None, description="what a resize costs; None: the defaults of ResizeCost")
    communication: Communication | None = Field(None, description="gradient overlap; None: the defaults of Communication")

    @property
    def comm(self) -> Communication:
        """The file's ``[communication]`` table, or its defaults."""
        return self.communication or Communication()

    @property
    def detailed_comm(self) -> bool:
        """Whether the file opts into issue 51's communication terms (DDP bucket order with ``overlap``, one flat ring
        over a shared NIC; docs/clusters.md): a link ``kind`` or a ``[communication]`` table. A file with neither is
        priced as before those terms existed (even buckets, hierarchical rings), bit for bit; ``efficiency`` alone
        scales a link's line rate either way."""
        return self.communication is not None or any(link.kind is not None for link in (self.links.intra_server, self.links.inter_server))

    @property
    def resize_cost(self) -> ResizeCost:
        """The file's ``[resize]`` table, or the defaults where it has none."""
        return self.resize or ResizeCost()

    @model_serializer(mode="wrap")
    def _without_absent_resize(self, handler: SerializerFunctionWrapHandler) -> dict:
        """A spec without ``[resize]`` dumps as it did before the table existed (figure fingerprints hash the dump)."""
        data = handler(self)
        for key in ("resize", "communication"):
            if getattr(self, key) is None and isinstance(data, dict):
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _known_device_types(self) -> ClusterSpec:
        for group in self.servers:
            if group.device_type not in self.device_types:
                known = ", ".join(sorted(self.device_types))
                raise ValueError(f"server group uses unknown device_type {group.device_type!r} (known: {known})")
        total = sum(group.count * group.devices_per_server for group in self.servers)
        if total > MAX_DEVICES:
            raise ValueError(f"the server groups hold {total:,} devices; at most {MAX_DEVICES:,} are supported")
        return self


class Cluster:
    """Runtime topology: per-device server index, memory and speed as numpy arrays."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        servers, memory, speed, types, models, scales = [], [], [], [], [], []
        server = 0
        for group in spec.servers:
            dtype = spec.device_types[group.device_type]
            for _ in range(group.count):
                for _ in range(group.devices_per_server):
                    servers.append(server)
                    memory.append(dtype.memory_bytes)
                    speed.append(dtype.speed)
                    types.append(group.device_type)
                    scales.append(dtype.compute_scale)
                    models.append(dtype.model or (group.device_type if group.device_type in DEVICE_MODELS else None))
                server += 1
        self.server_of = np.asarray(servers, dtype=np.int64)
        self.memory_bytes = np.asarray(memory, dtype=np.float64)
        self.speed = np.asarray(speed, dtype=np.float64)
        self.device_type = tuple(types)
        self.device_model = tuple(models)  # placer.cluster.devices model name per device, None if generic
        self.compute_scale = tuple(scales)  # factor on each device's sustained rates (1: as its model says)
        self.num_servers = server
        for array in (self.server_of, self.memory_bytes, self.speed):
            array.flags.writeable = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def num_devices(self) -> int:
        return len(self.server_of)

    @cached_property
    def server_list(self) -> list[int]:
        """``server_of`` as a plain list (fast indexing from Python)."""
        return self.server_of.tolist()

    @cached_property
    def devices_of_server(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(np.flatnonzero(self.server_of == s).tolist()) for s in range(self.num_servers))

    @cached_property
    def max_devices_per_server(self) -> int:
        return max(len(d) for d in self.devices_of_server)

    def device_name(self, device: int) -> str:
        server = int(self.server_of[device])
        return f"s{server}-g{self.devices_of_server[server].index(device)}"

    @cached_property
    def device_index(self) -> dict[str, int]:
        return {self.device_name(d): d for d in range(self.num_devices)}

    def __repr__(self) -> str:
        return f"Cluster(name={self.name!r}, servers={self.num_servers}, devices={self.num_devices})"


def preset_names() -> list[str]:
    return sorted(p.stem for p in (data_dir() / "clusters").glob("*.toml"))


def load_cluster(source: str | Path) -> Cluster:
    """Load a cluster from a preset name (``pacml``, ``dgx8x8``, ...) or a TOML file path."""
    path = Path(source)
    if not path.suffix and not path.exists():
        path = data_dir() / "clusters" / f"{source}.toml"
        if not path.exists():
            raise ClusterSpecError(f"unknown cluster preset {str(source)!r} (presets: {', '.join(preset_names())})")
    return Cluster(load_toml(path, ClusterSpec, what="cluster spec", error=ClusterSpecError))


def parse_cluster_spec(data: dict, *, source: str = "<dict>") -> ClusterSpec:
    return validate(ClusterSpec, data, source=source, error=ClusterSpecError)
