"""The library API's typed answers: occupancy in, a placement decision or a prediction out.

The wire format of ``placer place`` and ``POST /v1/placements`` is :class:`PlacementDecision`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Reason = Literal["does_not_fit", "deadline_unreachable", "policy_declined"]


class ClusterState(BaseModel):
    """Occupancy: busy devices by name (``s<server>-g<index>``) with seconds until each frees."""

    model_config = ConfigDict(extra="forbid")
    busy: dict[str, float | None] = Field(default_factory=dict, description="device name -> seconds until free (null: unknown)")


class PlacementDecision(BaseModel):
    accepted: bool
    job_id: str | None = None
    graph_key: str | None = Field(default=None, description="content key of the job graph (the service accepts it in place of the graph)")
    degree: int = Field(description="partitioning degree; 0 when no placement is possible")
    devices: list[str] = Field(description="device of each shard, by name")
    predicted_iteration_s: float | None
    predicted_jct_s: float | None = Field(description="of the placement chosen, or of the fastest possible one when rejected")
    sequential_jct_s: float
    deadline_s: float
    meets_deadline: bool
    reason: Reason | None = None
    policy: str
    strategy: dict[str, int] | None = Field(
        default=None, description='how the job is split, e.g. {"dp": 4, "tp": 2, "pp": 1} or {"sipml": 8}'
    )
    memory_per_device_bytes: float | None = None
    comm_s: float | None = Field(default=None, description="seconds per iteration that communication adds")
    extrapolated: bool = Field(False, description="the placement spans more servers than any the cluster was calibrated on")
    calibrated_max_servers: int | None = Field(None, description="the most servers a calibration row spanned (null: not calibrated)")
    interval_s: list[float] | None = Field(
        None, description="predicted_iteration_s -/+ the calibration's 90th-percentile error with each placement shape left out"
    )


class PlacementPrediction(BaseModel):
    """What the cost model predicts for a job on a set of devices (``placer predict``)."""

    graph: str
    cluster: str
    devices: list[str]
    device_types: dict[str, int] = Field(description="how many of the devices are of each type")
    degree: int
    servers: int
    strategy: dict[str, int] | None = Field(description="the fastest split that fits (or the fastest at all when none fits)")
    iteration_s: float
    jct_s: float
    sequential_jct_s: float
    speedup: float = Field(description="sequential JCT / JCT")
    scaling_efficiency: float = Field(description="speedup / degree")
    memory_per_device_bytes: float
    memory_capacity_bytes: float
    fits: bool
    comm_s: float
    data_loading_s: float
    micro_batches: int
    batch_size: int | None
    precision: str | None
    profiled_on: dict[str, str] | None
    extrapolated: bool = Field(False, description="the placement spans more servers than any the cluster was calibrated on")
    calibrated_max_servers: int | None = Field(None, description="the most servers a calibration row spanned (null: not calibrated)")
    interval_s: list[float] | None = Field(
        None, description="iteration_s -/+ the calibration's 90th-percentile error with each placement shape left out (null: none)"
    )
