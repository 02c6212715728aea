"""The service's state takes typed requests (issue 80, item A): bytes are parsed once, at the HTTP edge; the Ray
integration's in-process service hands it the graph itself, with the request's bounds and errors."""

from __future__ import annotations

import json

import pytest

from placer.baselines.registry import make_heuristic
from placer.ray import LocalService
from placer.serve.errors import GraphTooLargeError, IdempotencyConflictError, InvalidRequestError
from placer.serve.occupancy import Occupancy
from placer.serve.parsing import graph_placement, parse_request
from placer.serve.schemas import GraphPlacement, PlacementRequest
from placer.serve.settings import ServiceSettings
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(1, 4)


def test_the_in_process_terms_are_the_requests_own():
    assert set(GraphPlacement.model_fields) - {"graph"} == set(PlacementRequest.model_fields) - {"graph", "graph_key"}
    for name in ("beta", "iterations", "lease_s"):
        ours, theirs = GraphPlacement.model_fields[name], PlacementRequest.model_fields[name]
        assert (ours.metadata, ours.default, ours.description) == (theirs.metadata, theirs.default, theirs.description)


def test_a_local_placement_never_serialises_its_graph(monkeypatch):
    import placer.serve.occupancy as occupancy

    def refuse(*args, **kwargs):
        raise AssertionError("the graph was parsed again")

    monkeypatch.setattr(occupancy, "parse_request", refuse)
    monkeypatch.setattr(occupancy, "job_graph_from_document", refuse)
    graph = chain()
    monkeypatch.setattr(type(graph), "to_dict", refuse)
    service = LocalService(CLUSTER, "fixed:1")
    try:
        decision = service.place(graph, beta=1.0, lease_s=60, iterations=3)
        assert decision.accepted and service.state.job_graphs[decision.job_id or ""].key == graph.key
        assert service.occupancy().jobs[0].lease_s == 60.0
    finally:
        service.close()


def test_in_process_terms_are_refused_as_a_requests_are():
    graph = chain()
    body = json.dumps({"graph": graph.to_dict(), "beta": 2.0, "lease_s": 0.5}).encode()
    with pytest.raises(InvalidRequestError) as over_http:
        parse_request(body, 100, 100)
    with pytest.raises(InvalidRequestError) as in_process:
        graph_placement(graph, 2.0, lease_s=0.5)
    assert str(in_process.value) == str(over_http.value) == "invalid request (2 errors)"
    assert [(e["loc"], e["type"]) for e in in_process.value.errors] == [(e["loc"], e["type"]) for e in over_http.value.errors]


def test_an_in_process_graph_over_the_limits_is_refused_as_over_http():
    graph = chain()
    state = Occupancy(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(max_graph_ops=graph.num_ops - 1))
    try:
        body = json.dumps({"graph": graph.to_dict(), "beta": 1.0}).encode()
        with pytest.raises(GraphTooLargeError) as over_http:
            state.parse(body)
        with pytest.raises(GraphTooLargeError) as in_process:
            state.place(graph_placement(graph, 1.0))
        assert str(in_process.value) == str(over_http.value)
    finally:
        state.close()


def test_an_in_process_retry_gets_the_first_answer():
    state = Occupancy(CLUSTER, make_heuristic("fixed:1"))
    try:
        first = state.place(graph_placement(chain(), 1.0), "key-1")
        assert state.place(graph_placement(chain(), 1.0), "key-1") == first and len(state.jobs) == 1
        with pytest.raises(IdempotencyConflictError):
            state.place(graph_placement(chain(), 0.9), "key-1")
    finally:
        state.close()
