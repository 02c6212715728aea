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
from placer.serve.http import create_app
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
