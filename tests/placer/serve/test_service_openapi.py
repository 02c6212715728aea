"""The OpenAPI schema says what the service answers (issue 82, item 7): every error a real loopback server gives fits
the one error model its route declares for that status, and "exactly one of" rules are in the request schemas."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator

import httpx
import jsonschema
import pytest

from placer.baselines.registry import make_heuristic
from placer.graphs.catalog import shipped_graph_names
from placer.serve.http import create_app
from placer.serve.schemas import MAX_DEGREE
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, toy_cluster

TOKEN = secrets.token_urlsafe(32)


@contextlib.contextmanager
def _served() -> Iterator[tuple[httpx.Client, dict]]:
    app = create_app(toy_cluster(1, 4), make_heuristic("fixed:1"), ServiceSettings(token=TOKEN))
    with running(loopback(app)) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            yield client, client.get("/openapi.json").json()


def _validator(spec: dict, schema: dict) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**schema, "components": spec["components"]})


def _check(spec: dict, path: str, method: str, response: httpx.Response) -> None:
    declared = spec["paths"][path][method]["responses"]
    status = str(response.status_code)
    assert status in declared, f"{method.upper()} {path} answered {status}, undeclared ({sorted(declared)})"
    schema = declared[status]["content"]["application/json"]["schema"]
    _validator(spec, schema).validate(response.json())


def test_real_error_answers_fit_the_error_model_their_route_declares():
    with _served() as (client, spec):
        graph = chain().to_dict()
        held = client.post("/v1/placements", json={"graph": graph, "beta": 1.0}).json()
        other = client.post("/v1/placements", json={"graph": graph, "beta": 1.0}).json()
        answers = [
            ("/v1/cluster", "get", client.get("/v1/cluster", headers={"Authorization": "Bearer wrong"}), 401),
            ("/v1/jobs/{job_id}", "delete", client.delete("/v1/jobs/never"), 404),
            ("/v1/jobs/{job_id}/resize", "post", client.post(f"/v1/jobs/{held['job_id']}/resize", json={"devices": other["devices"]}), 409),
            ("/v1/jobs/{job_id}/step-times", "post", client.post(f"/v1/jobs/{held['job_id']}/step-times", json={"x": "y" * 5000}), 413),
            ("/v1/jobs/{job_id}/lease", "post", client.post(f"/v1/jobs/{held['job_id']}/lease", content=b"{}"), 415),
            ("/v1/placements", "post", client.post("/v1/placements", json={"graph": "nosuchgraph", "beta": 1.0}), 422),
            ("/v1/placements", "post", client.post("/v1/placements", json={"graph": graph, "beta": "1"}), 422),
            (
                "/v1/jobs/{job_id}/resize",
                "post",
                client.post(f"/v1/jobs/{held['job_id']}/resize", json={"degree": 1, "devices": ["a"]}),
                422,
            ),
        ]
        for path, method, response, status in answers:
            assert response.status_code == status, (path, response.status_code, response.text)
            _check(spec, path, method, response)
        assert isinstance(answers[5][2].json()["detail"], str) and isinstance(answers[6][2].json()["detail"], list)


def test_every_route_declares_the_errors_it_gives():
    with _served() as (_, spec):
        for path, operations in spec["paths"].items():
            for method, operation in operations.items():
                codes = set(operation["responses"])
                if path != "/v1/health":
                    assert "401" in codes, (path, method, codes)
                if "{job_id}" in path:
                    assert {"404", "422"} <= codes, (path, method, codes)
                if method == "post":
                    assert {"401", "413", "415", "422"} <= codes, (path, codes)
                for code, answer in operation["responses"].items():
                    if code.startswith(("4", "5")):
                        assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's default (an array only) is not used


@pytest.mark.parametrize(
    ("model", "body", "valid"),
    [
        ("PlacementRequest", {"graph": "resnet50", "beta": 1.0}, True),
        ("PlacementRequest", {"graph_key": "k", "beta": 1.0}, True),
        ("PlacementRequest", {"graph": None, "graph_key": "k", "beta": 1.0}, True),
        ("PlacementRequest", {"graph": "resnet50", "graph_key": "k", "beta": 1.0}, False),
        ("PlacementRequest", {"beta": 1.0}, False),
        ("ResizeRequest", {"degree": 2}, True),
        ("ResizeRequest", {"devices": ["a"]}, True),
        ("ResizeRequest", {"degree": 2, "devices": ["a"]}, False),
        ("ResizeRequest", {}, False),
    ],
)
def test_exactly_one_of_is_in_the_request_schemas(model, body, valid):
    with _served() as (client, spec):
        validator = _validator(spec, {"$ref": f"#/components/schemas/{model}"})
        assert validator.is_valid(body) == valid, json.dumps(body)


def test_a_method_no_route_takes_is_405_not_415_and_a_route_still_needs_json():
    # a PUT on a path whose routes take GET, POST or DELETE changes nothing: the router's 405 (schemathesis's ST204)
    with _served() as (client, _):
        bare = {"Authorization": client.headers["Authorization"]}
        assert client.put("/v1/jobs/0", headers=bare).status_code == 405
        assert client.put("/v1/jobs/0/resize-proposal", headers=bare).status_code == 405
        assert client.post("/v1/jobs/0/lease", headers=bare).status_code == 415  # a route's write without JSON: refused


# schemathesis's failures (issue 82 item 7; tests/placer/serve/test_schemathesis.py runs it): each pairs what the schema
# says of a request with what the service answers it


def test_an_integer_may_be_written_as_an_integral_float_and_a_fractional_one_is_refused():
    # JSON Schema's integer takes 1044.0: a strict int refused it (ST202); 1.5 is no integer for the schema nor the service
    with _served() as (client, spec):
        placement, resize = (_validator(spec, {"$ref": f"#/components/schemas/{m}"}) for m in ("PlacementRequest", "ResizeRequest"))
        graph = chain().to_dict()
        assert placement.is_valid({"graph": graph, "beta": 1.0, "iterations": 10.0}) and resize.is_valid({"degree": 1.0})
        assert not placement.is_valid({"graph": graph, "beta": 1.0, "iterations": 10.5}) and not resize.is_valid({"degree": 1.5})
        held = client.post("/v1/placements", json={"graph": graph | {"schema_version": 2.0}, "beta": 1.0, "iterations": 10.0})
        assert held.status_code == 200 and held.json()["accepted"], held.text
        moved = client.post(f"/v1/jobs/{held.json()['job_id']}/resize", json={"degree": 1.0})
        assert moved.status_code == 200 and moved.json()["degree"] == 1, moved.text
        for path, body, field in [
            (f"/v1/jobs/{held.json()['job_id']}/resize", {"degree": 1.5}, "degree"),
            ("/v1/placements", {"graph": graph, "beta": 1.0, "iterations": 10.5}, "iterations"),
        ]:
            refused = client.post(path, json=body)
            assert refused.status_code == 422, refused.text
            assert refused.json()["detail"][0] | {"msg": ""} == {"loc": ["body", field], "msg": "", "type": "int_from_float"}
        assert client.post("/v1/placements", json={"graph": graph | {"schema_version": 1.5}, "beta": 1.0}).status_code == 422


def test_a_graph_named_is_one_the_schema_lists():
    # "graph": "" fit the schema's string and got 422 (ST202): the names are the schema's enum, and the service takes each
    with _served() as (client, spec):
        validator = _validator(spec, {"$ref": "#/components/schemas/PlacementRequest"})
        named = [s for s in spec["components"]["schemas"]["PlacementRequest"]["properties"]["graph"]["anyOf"] if s.get("type") == "string"]
        assert [s["enum"] for s in named] == [shipped_graph_names()]
        for name in ("", "nosuchgraph"):
            assert not validator.is_valid({"graph": name, "beta": 1.0})
            assert client.post("/v1/placements", json={"graph": name, "beta": 1.0}).status_code == 422
        assert validator.is_valid({"graph": "resnet50", "beta": 1.0})
        assert client.post("/v1/placements", json={"graph": "resnet50", "beta": 1.0}).status_code == 200


def test_a_resize_naming_more_devices_than_the_schema_allows_is_invalid_not_too_large():
    # 4,097 names (maxItems 4,096) got 413 from the 4 KiB body limit, which schemathesis does not count as a refusal
    # (ST201); the schema's largest list did not fit either. A resize's bodies now hold MAX_DEGREE of the longest names.
    with _served() as (client, spec):
        validator = _validator(spec, {"$ref": "#/components/schemas/ResizeRequest"})
        job = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}).json()["job_id"]
        largest = [f"{i:064d}" for i in range(MAX_DEGREE)]
        assert validator.is_valid({"devices": largest}) and not validator.is_valid({"devices": [*largest, "x"]})
        body = json.dumps({"devices": largest}).encode()  # ", " between names, as requests writes them
        answer = client.post(f"/v1/jobs/{job}/resize", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 422 and "unknown devices" in answer.json()["detail"], answer.text[:300]  # read, not 413
        over = client.post(f"/v1/jobs/{job}/resize", json={"devices": [*largest, "x"]})
        assert over.status_code == 422 and over.json()["detail"][0]["type"] == "too_long", over.text[:300]
        assert not validator.is_valid({"devices": ["s0-g0", "s0-g0"]})  # each once (uniqueItems), as the service checks
        assert client.post(f"/v1/jobs/{job}/resize", json={"devices": ["s0-g0", "s0-g0"]}).status_code == 422


def test_a_lease_renewal_declares_the_json_body_the_service_requires():
    # the body was optional in the schema, and a renewal without one got 415 (ST202): the schema requires it now
    with _served() as (client, spec):
        assert spec["paths"]["/v1/jobs/{job_id}/lease"]["post"]["requestBody"]["required"] is True
        job = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0, "lease_s": 60.0}).json()["job_id"]
        bare = {"Authorization": client.headers["Authorization"]}
        assert client.post(f"/v1/jobs/{job}/lease", headers=bare).status_code == 415
        assert client.post(f"/v1/jobs/{job}/lease", json={}).status_code == 200
        assert client.post(f"/v1/jobs/{job}/lease", headers={"Content-Type": "application/json"}).status_code == 200  # as {}
