"""Wire types of the placement service (requests and responses), strict and bounded."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.api.types import PlacementDecision
from placer.calibration.measurements import MAX_STEP_S
from placer.common.integers import WHOLE_FLOATS
from placer.graphs.catalog import shipped_graph_names
from placer.graphs.document import MAX_ITERATIONS, EdgeDocument, GraphBody, GraphDocument, NodeDocument
from placer.graphs.job_graph import JobGraph

MAX_LEASE_S = 30 * 24 * 3600.0  # a month
MIN_LEASE_S = 1.0


def exactly_one_of(first: str, second: str) -> dict:
    """A JSON schema ``oneOf`` saying an object gives exactly one of two nullable fields (the other absent or null)."""
    return {
        "oneOf": [
            {"required": [given], "properties": {given: {"not": {"type": "null"}}, other: {"type": "null"}}}
            for given, other in ((first, second), (second, first))
        ]
    }


def _graph_or_name(schema: dict) -> None:
    """``graph``'s schema: a graph document, or the name of a shipped graph (placer.serve.parsing), or null. The names
    are listed: any other string (``""`` too) is refused, so the schema allows none."""
    name = {"type": "string", "enum": shipped_graph_names(), "description": "the name of a shipped graph, e.g. resnet50"}
    schema["anyOf"] = [*schema.get("anyOf", []), name]


# A placement's terms, the same for a request over HTTP and one made in this process (:class:`GraphPlacement`).
Beta = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False, description="deadline = beta x sequential JCT")]
# (integers are JSON Schema's, as the OpenAPI says: 1044.0 is 1044, 1044.5 is refused; placer.common.integers)
Iterations = Annotated[
    Annotated[int, Field(ge=1, le=MAX_ITERATIONS), WHOLE_FLOATS] | None, Field(description="training iterations (default: the graph's)")
]
LeaseSeconds = Annotated[
    float | None,
    Field(
        ge=MIN_LEASE_S,
        le=MAX_LEASE_S,
        allow_inf_nan=False,
        description="hold the devices this long unless renewed (POST /v1/jobs/{id}/lease); null: until released",
    ),
]


class PlacementRequest(BaseModel):
    """A job to place: ``graph`` (the whole graph, or a shipped graph's name) or ``graph_key`` (one this server has seen).

    Types are strict: ``"beta": "0.5"`` or ``true`` is refused, not coerced (an integer may be written ``2.0``).
    """

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=exactly_one_of("graph", "graph_key"))
    graph: GraphDocument | None = Field(
        default=None,
        description="a job graph document (placer.graphs.document) or a shipped graph's name",
        json_schema_extra=_graph_or_name,
    )
    graph_key: str | None = Field(default=None, max_length=64, description="the graph_key of an earlier response, instead of graph")
    beta: Beta
    iterations: Iterations = None
    lease_s: LeaseSeconds = None

    @model_validator(mode="after")
    def _one_graph(self) -> PlacementRequest:
        if (self.graph is None) == (self.graph_key is None):
            raise ValueError("give exactly one of 'graph' and 'graph_key'")
        return self


class GraphPlacement(BaseModel):
    """A placement asked for in this process (the Ray integration's :class:`~placer.ray.LocalService`): the graph itself,
    already built, with a :class:`PlacementRequest`'s terms and bounds; nothing to serialise, scan, parse or rebuild."""

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    graph: JobGraph
    beta: Beta
    iterations: Iterations = None
    lease_s: LeaseSeconds = None


Placement = PlacementRequest | GraphPlacement  # what the service's state places: a request parsed at the HTTP edge, or one made here


@lru_cache(maxsize=8)
def bounded_request(max_ops: int, max_edges: int | None = None) -> type[PlacementRequest]:
    """:class:`PlacementRequest` whose graph may have at most ``max_ops`` ops and ``max_edges`` edges (None: any):
    validation stops at op ``max_ops + 1`` (a ``too_long`` error at ``("graph", "graph", "nodes")``) or
    edge ``max_edges + 1`` (at ``(..., "edges")``), before building anything for the rest of a huge document."""

    class BoundedGraphBody(GraphBody):
        nodes: Annotated[list[NodeDocument], Field(fail_fast=True, max_length=max_ops)]
        edges: Annotated[list[EdgeDocument], Field(fail_fast=True, max_length=max_edges)]

    class BoundedGraphDocument(GraphDocument):
        graph: BoundedGraphBody

    class BoundedPlacementRequest(PlacementRequest):
        graph: BoundedGraphDocument | None = Field(default=None, description="a job graph document (placer.graphs.document)")

    return BoundedPlacementRequest


class LeaseRenewal(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    lease_s: float | None = Field(
        default=None, ge=MIN_LEASE_S, le=MAX_LEASE_S, allow_inf_nan=False, description="new lease from now (default: the job's lease)"
    )


class StepTimeReport(BaseModel):
    """A running job's measured seconds per training step, on the devices it was given."""

    model_config = ConfigDict(extra="forbid", strict=True)
    step_time_s: float = Field(gt=0, le=MAX_STEP_S, allow_inf_nan=False)


MAX_DEGREE = 4096  # devices a resize may name (a cluster of more is refused at the degree check)
MAX_DEVICE_NAME_CHARS = 64  # a device's name in a resize (the service's own are s<server>-g<index>)


class ResizeRequest(BaseModel):
    """A running job's new placement: ``degree`` (the service picks the devices) or ``devices`` (by name)."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=exactly_one_of("degree", "devices"))
    degree: Annotated[int, Field(ge=1, le=MAX_DEGREE), WHOLE_FLOATS] | None = Field(
        default=None, description="devices to run on; the service picks which"
    )
    devices: list[Annotated[str, Field(max_length=MAX_DEVICE_NAME_CHARS)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_DEGREE,
        description="the devices to run on, by name, each once",
        json_schema_extra={"uniqueItems": True},  # (checked by _one_target)
    )

    @model_validator(mode="after")
    def _one_target(self) -> ResizeRequest:
        if (self.degree is None) == (self.devices is None):
            raise ValueError("give exactly one of 'degree' and 'devices'")
        if self.devices is not None and len(set(self.devices)) != len(self.devices):
            raise ValueError("devices must be distinct")
        return self


class ResizeDecision(BaseModel):
    """A running job's placement after a resize (or, from ``GET /v1/jobs/{id}/resize-proposal``, the one proposed)."""

    job_id: str
    graph: str
    degree: int
    devices: list[str] = Field(description="its devices now (a proposal: the devices proposed)")
    previous_devices: list[str] = Field(description="its devices before")
    moved: bool = Field(description="the devices changed (False: the same devices, nothing happened, no pause)")
    predicted_iteration_s: float = Field(description="predicted seconds per step on the devices")
    previous_iteration_s: float = Field(description="predicted seconds per step on the previous devices, by the same model")
    resize_pause_s: float = Field(description="predicted seconds the move pauses training: checkpoint, restart (the cluster's [resize])")
    predicted_jct_s: float = Field(
        description="from its reservation to its predicted finish: the time so far, the pause, the rest at the new step time"
    )
    strategy: dict[str, int] | None = Field(default=None, description='how the job is split there, e.g. {"dp": 2, "tp": 1, "pp": 1}')


def stored_answer(text: str) -> PlacementDecision | ResizeDecision:
    """An idempotency answer of the state file: a placement's or a resize's (ValueError if it is neither)."""
    try:
        return PlacementDecision.model_validate_json(text)
    except ValueError:
        return ResizeDecision.model_validate_json(text)


class RunningJob(BaseModel):
    job_id: str
    graph: str
    devices: list[str]
    reserved_at_s: float = Field(description="when the devices were reserved, Unix time in seconds (wall clock)")
    reserved_at: str = Field(description="the same as an ISO 8601 UTC timestamp")
    predicted_jct_s: float
    lease_s: float | None = Field(default=None, description="the lease a renewal extends by (null: no lease)")
    expires_at_s: float | None = Field(default=None, description="Unix time the devices are freed unless the lease is renewed")
    owner: str | None = Field(default=None, description="the tenant that placed it (null: placed before tenants)")


class DeviceState(BaseModel):
    device: str
    server: int
    device_type: str
    job_id: str | None = Field(description="the job holding it, if the asker may see it (its own, or any for an admin)")
    busy: bool = Field(False, description="held by a job (with job_id null: another tenant's)")


class ClusterOccupancy(BaseModel):
    cluster: str
    devices_total: int
    devices_free: int
    jobs: list[RunningJob]
    devices: list[DeviceState]


class SuspectReport(BaseModel):
    """A reported step time held out of the fit: too far from the prediction of the model in use."""

    graph: str
    devices: list[str]
    step_time_s: float
    predicted_s: float
    ratio: float = Field(description="step_time_s / predicted_s")
    why: str


class CalibrationState(BaseModel):
    """What the service's cost model has learned from reported step times."""

    measurements: int = Field(description="step times kept (the newest)")
    needed: int | None = Field(description="measurements a fit needs (constants + 1); null before the first report")
    fitted: dict[str, float] = Field(description="fitted constant -> value, as in a calibrated cluster file")
    median_error: float | None = Field(description="median |predicted / measured - 1| over the kept rows at the fitted constants")
    refits: int
    refit_at: str | None = Field(description="when the model in use was fitted (ISO 8601 UTC)")
    pending: bool = Field(description="a refit is queued or running")
    last_error: str | None = Field(description="why the last refit kept the previous model, if it did")
    cv_error: float | None = Field(None, description="median cross-validated |error| of the model in use (a placement shape held out)")
    shared: str | None = Field(None, description="why the cluster's shared constants (links, overheads) moved or were held")
    suspects: list[SuspectReport] = Field(default_factory=list, description="reports held out of the fit (the newest)")


class ValidationIssue(BaseModel):
    """One reason a request did not validate: where (``loc``, from ``body``, ``query``, ``header`` or ``path``), what."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error answer's body: ``detail`` is one line of text, or (a request that did not validate field by field, 422)
    the list of what is wrong, at most 20 items."""

    detail: str | list[ValidationIssue]
