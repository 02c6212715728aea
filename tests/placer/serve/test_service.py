"""The service through a real uvicorn server on a loopback port."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from placer.baselines.registry import make_heuristic
from placer.graphs.job_graph import load_job_graph
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, toy_cluster

SOAK_STATE: dict = {}


@pytest.fixture(scope="module")
def server():
    cluster = toy_cluster(2, 4, inter=(1e9, 0.0))
    app = create_app(cluster, make_heuristic("fixed:2+best_fit"), ServiceSettings(max_body_bytes=200_000, max_cached_graphs=64))
    SOAK_STATE["app"] = app
    with running(loopback(app)) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
        yield client


def _release_all(client):
    for job in client.get("/v1/cluster").json()["jobs"]:
        client.delete(f"/v1/jobs/{job['job_id']}")


def test_health_and_docs(server):
    assert server.get("/v1/health").json()["status"] == "ok"
    assert server.get("/docs").status_code == 200
    assert "/v1/placements" in server.get("/openapi.json").json()["paths"]


def test_reserve_and_release(server):
    _release_all(server)
    body = {"graph": chain().to_dict(), "beta": 1.0}
    first = server.post("/v1/placements", json=body).json()
    assert first["accepted"] and first["job_id"] and first["devices"] == ["s0-g0", "s0-g1"]
    # data parallel over 2 devices: (2 + 4) s / 2; the chain has no parameters, so no gradient all-reduce
    assert first["predicted_jct_s"] == pytest.approx(3.0) and first["strategy"] == {"dp": 2, "tp": 1, "pp": 1}
    (job,) = server.get("/v1/cluster").json()["jobs"]
    assert abs(job["reserved_at_s"] - time.time()) < 60 and job["reserved_at"].startswith(time.strftime("%Y-", time.gmtime()))
    second = server.post("/v1/placements", json=body).json()
    assert second["devices"] == ["s0-g2", "s0-g3"]
    occupancy = server.get("/v1/cluster").json()
    assert occupancy["devices_free"] == 4 and len(occupancy["jobs"]) == 2
    assert server.delete(f"/v1/jobs/{first['job_id']}").status_code == 200
    assert server.get("/v1/cluster").json()["devices_free"] == 6
    assert server.delete(f"/v1/jobs/{first['job_id']}").status_code == 404


def test_concurrent_requests_never_double_book(server):
    _release_all(server)
    body = {"graph": chain().to_dict(), "beta": 1.0}
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: server.post("/v1/placements", json=body).json(), range(16)))
    accepted = [a for a in answers if a["accepted"]]
    assert len(accepted) == 4  # 8 devices / degree 2
    devices = [d for a in accepted for d in a["devices"]]
    assert len(devices) == len(set(devices)) == 8
    assert {a["reason"] for a in answers if not a["accepted"]} == {"does_not_fit"}
    _release_all(server)


def _bad(mutate):
    body = {"graph": chain().to_dict(), "beta": 0.5}
    mutate(body)
    return body


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        (b"{not json", 422, "Invalid JSON: key must be a string at line 1 column 2"),
        (_bad(lambda b: b.pop("beta")), 422, "beta"),
        (_bad(lambda b: b.update(beta=1.5)), 422, "less than or equal to 1"),
        (_bad(lambda b: b.update(iterations=0)), 422, "greater than or equal to 1"),
        (_bad(lambda b: b["graph"]["graph"]["edges"].append({"source": "b", "target": "a", "tensor_bytes": 1})), 422, "has a cycle"),
        (_bad(lambda b: b["graph"]["graph"].update(nodes=[], edges=[])), 422, "has no ops"),
        (_bad(lambda b: b["graph"]["graph"]["nodes"][0].update(compute_s=float("inf"))), 422, "'compute_s' must be a finite number"),
        (_bad(lambda b: b.update(policy_file="/etc/passwd")), 422, "Extra inputs are not permitted"),
    ],
)
def test_bad_input_gets_a_4xx_with_a_precise_message(server, payload, status, message):
    content = payload if isinstance(payload, bytes) else json.dumps(payload, allow_nan=True).encode()
    response = server.post("/v1/placements", content=content, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert message in response.text
    assert server.get("/v1/health").status_code == 200


def test_oversized_body_is_refused(server):
    big = load_job_graph("data/graphs/nasnetalarge.json").to_dict()  # ~1 MB > 200 kB limit
    response = server.post("/v1/placements", json={"graph": big, "beta": 0.5})
    assert response.status_code == 413


def test_unknown_route_and_job(server):
    assert server.delete("/v1/jobs/nope").status_code == 404


def test_a_graph_sent_once_can_be_named_by_its_key(server):
    _release_all(server)
    first = server.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}).json()
    assert first["graph_key"] == chain().key
    again = server.post("/v1/placements", json={"graph_key": first["graph_key"], "beta": 1.0}).json()
    assert again["accepted"] and again["predicted_jct_s"] == first["predicted_jct_s"]
    assert server.post("/v1/placements", json={"graph_key": "nope", "beta": 1.0}).status_code == 404
    both = server.post("/v1/placements", json={"graph": chain().to_dict(), "graph_key": first["graph_key"], "beta": 1.0})
    assert both.status_code == 422 and "exactly one of 'graph' and 'graph_key'" in both.text
    _release_all(server)


def test_memory_stays_bounded_over_many_distinct_graphs(server):
    """A soak: more distinct graphs than any cache holds; every per-graph cache stays at its bound."""
    _release_all(server)
    for i in range(64 + 60):
        graph = chain().to_dict() | {"name": f"soak{i}"}
        response = server.post("/v1/placements", json={"graph": graph, "beta": 1.0}).json()
        if response.get("job_id"):
            server.delete(f"/v1/jobs/{response['job_id']}")
    occupancy = SOAK_STATE["app"].state.occupancy
    assert len(occupancy.graphs) == 64
    assert len(occupancy.cost._compiled) == len(occupancy.cost._sequential) == 64  # the bound, reached and held


def test_a_graph_over_the_size_cap_gets_413_naming_the_limit():
    from fastapi.testclient import TestClient

    app = create_app(toy_cluster(1, 2), make_heuristic("lean"), ServiceSettings(max_graph_ops=1))
    with TestClient(app) as client:
        response = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0})  # 2 ops > 1
    assert response.status_code == 413 and "accepts at most 1" in response.json()["detail"]


def test_a_slow_big_graph_does_not_hold_up_a_small_placement(server):
    """The per-graph work of one request runs outside the lock: another request completes meanwhile."""
    occupancy = SOAK_STATE["app"].state.occupancy
    entered, gate = threading.Event(), threading.Event()
    original = occupancy._warm

    def slow(graph):
        if graph.name == "big":
            entered.set()
            assert gate.wait(20)
        original(graph)

    _release_all(server)
    occupancy._warm = slow
    try:
        big = chain().to_dict() | {"name": "big"}
        done = {}
        thread = threading.Thread(target=lambda: done.update(r=server.post("/v1/placements", json={"graph": big, "beta": 1.0})))
        thread.start()
        assert entered.wait(20)
        small = server.post("/v1/placements", json={"graph": chain().to_dict() | {"name": "small"}, "beta": 1.0})
        assert small.status_code == 200 and small.json()["accepted"] and thread.is_alive()  # served while "big" is stuck
        gate.set()
        thread.join(20)
        assert done["r"].status_code == 200
    finally:
        occupancy._warm = original
        gate.set()
        _release_all(server)
