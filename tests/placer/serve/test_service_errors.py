"""The service's state raises domain errors; one table in the HTTP layer gives each its status."""

import json

import pytest
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.common.errors import GraphValidationError, PlacerError
from placer.serve.errors import (
    IdempotencyConflictError,
    InvalidRequestError,
    NoLeaseError,
    ServiceError,
    UnknownGraphKeyError,
    UnknownJobError,
)
from placer.serve.http import ERROR_STATUS, create_app, error_status
from placer.serve.occupancy import Occupancy
from placer.serve.schemas import LeaseRenewal
from placer.serve.settings import ServiceSettings
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(1, 4)
BODY = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()


def test_every_domain_error_has_its_status_in_the_table():
    statuses = {kind.__name__: error_status(kind("x")) for kind in ServiceError.__subclasses__()}
    assert statuses == {
        "InvalidRequestError": 422,
        "GraphTooLargeError": 413,
        "GraphMemoryFullError": 413,
        "UnknownGraphKeyError": 404,
        "IdempotencyConflictError": 422,
        "UnknownJobError": 404,
        "LeaseExpiredError": 410,
        "NoLeaseError": 422,
        "JobGraphUnavailableError": 409,
        "DevicesBusyError": 409,
        "DoesNotFitError": 422,
        "ReportsTooFrequentError": 429,
        "StateUnavailableError": 503,
    }
    assert set(ServiceError.__subclasses__()) <= set(ERROR_STATUS)
    assert error_status(GraphValidationError("x")) == error_status(PlacerError("x")) == 422  # other bad input: the base row


def test_the_state_raises_domain_errors_and_knows_no_http():
    state = Occupancy(CLUSTER, make_heuristic("fixed:1"))
    try:
        with pytest.raises(UnknownJobError, match="no running job 'nope'"):
            state.release("nope")
        with pytest.raises(UnknownGraphKeyError, match="unknown graph_key 'k'"):
            state.place(state.parse(b'{"graph_key": "k", "beta": 1.0}'))
        with pytest.raises(InvalidRequestError) as invalid:
            state.parse(b'{"graph_key": "k", "beta": 2}')
        assert [(e["loc"], e["type"]) for e in invalid.value.errors] == [(("body", "beta"), "less_than_equal")]
        job = state.place(state.parse(BODY), "key-1")
        with pytest.raises(IdempotencyConflictError, match="was used for a different request"):
            state.place(state.parse(BODY.replace(b'"beta": 1.0', b'"beta": 0.9')), "key-1")
        with pytest.raises(NoLeaseError, match="has no lease"):
            state.renew(job.job_id, LeaseRenewal())
    finally:
        state.close()


def test_a_step_time_for_a_job_placed_before_a_restart_gets_409(tmp_path):
    settings = ServiceSettings(state_path=tmp_path / "s.sqlite3")
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), settings)) as client:
        job = client.post("/v1/placements", content=BODY, headers={"content-type": "application/json"}).json()
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), settings)) as client:
        response = client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": 1.0})
    assert response.status_code == 409
    assert response.json() == {"detail": f"job {job['job_id']!r} was placed before this server started: its graph is not known here"}


def test_settings_are_frozen_and_checked():
    settings = ServiceSettings(max_graph_ops=5)
    with pytest.raises(ValueError, match="frozen"):
        settings.max_graph_ops = 6
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        ServiceSettings(max_body_bytes=0)
    assert "s3cret" not in repr(ServiceSettings(token="s3cret"))
