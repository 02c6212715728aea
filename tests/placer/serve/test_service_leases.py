"""Idempotency keys, leases, reported step times and bounded bodies of the placement service."""

import json
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.serve.clock import Clock
from placer.serve.graphs import BYTES_PER_GRAPH_ELEMENT
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(1, 4)


def _client(tmp_path=None, clock=None, **kwargs) -> TestClient:
    state = {"state_path": tmp_path / "s.sqlite3"} if tmp_path is not None else {}
    return TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**state, **kwargs), clock))


def _clock(now: list[float]) -> Clock:
    """Both clocks at ``now[0]`` (a clock that steps: :mod:`tests.placer.serve.test_service_clock`)."""
    return Clock(monotonic=lambda: now[0], wall=lambda: now[0])


def _matmul_chain(name: str) -> dict:
    """The toy chain with matmul-class ops (a job's fitted compute rate scales those)."""
    graph = chain().to_dict() | {"name": name}
    for node in graph["graph"]["nodes"]:
        node["name"] = "aten.mm"
    return graph


def _place(client, key=None, **fields):
    headers = {"Idempotency-Key": key} if key else {}
    return client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0, **fields}, headers=headers)


def test_a_retry_with_the_same_key_gets_the_first_answer_and_reserves_nothing_more(tmp_path):
    with _client(tmp_path) as client:
        first = _place(client, key="k-1").json()
        again = _place(client, key="k-1").json()
        assert first["accepted"] and again == first
        assert client.get("/v1/cluster").json()["devices_free"] == 3  # one device held, not two
        other = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 0.9}, headers={"Idempotency-Key": "k-1"})
        assert other.status_code == 422 and "used for a different request" in other.json()["detail"]
    with _client(tmp_path) as client:  # the answer survives a restart: a client retrying after a crash gets it
        assert _place(client, key="k-1").json() == first
        assert client.get("/v1/cluster").json()["devices_free"] == 3


def test_concurrent_retries_of_one_key_reserve_once():
    with _client() as client:
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(_place(client, key="same").json())) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len({a["job_id"] for a in answers}) == 1
        assert client.get("/v1/cluster").json()["devices_free"] == 3


@pytest.mark.parametrize("key", ["", "x" * 256, "spaces are not allowed"])
def test_a_bad_idempotency_key_is_refused(key):
    with _client() as client:
        response = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}, headers={"Idempotency-Key": key})
        assert response.status_code == 422 and "idempotency-key" in response.text
        assert client.get("/v1/cluster").json()["devices_free"] == 4


def test_a_lease_not_renewed_frees_the_devices_and_is_logged(caplog):
    now = [1000.0]
    with _client(clock=_clock(now)) as client:
        job = _place(client, lease_s=10.0).json()
        held = client.get("/v1/cluster").json()["jobs"][0]
        assert (held["lease_s"], held["expires_at_s"]) == (10.0, 1010.0)
        now[0] = 1008.0
        renewed = client.post(f"/v1/jobs/{job['job_id']}/lease", headers={"Content-Type": "application/json"}).json()  # bodiless
        assert renewed["expires_at_s"] == 1018.0
        assert client.post(f"/v1/jobs/{job['job_id']}/lease", json={"lease_s": 30.0}).json()["expires_at_s"] == 1038.0
        now[0] = 1038.5
        with caplog.at_level("WARNING", logger="placer.serve"):
            assert client.get("/v1/cluster").json()["devices_free"] == 4
        assert f"lease of job {job['job_id']}" in caplog.text and "devices freed" in caplog.text
        gone = client.post(f"/v1/jobs/{job['job_id']}/lease", json={})
        assert gone.status_code == 410 and "lease ran out at" in gone.json()["detail"]
        assert client.delete(f"/v1/jobs/{job['job_id']}").status_code == 410
        assert client.delete("/v1/jobs/never").status_code == 404


def test_expired_leases_are_freed_at_start_too(tmp_path):
    now = [1000.0]
    with _client(tmp_path, _clock(now)) as client:
        _place(client, lease_s=5.0)
        _place(client)  # no lease: held until released
    now[0] = 2000.0
    with _client(tmp_path, _clock(now)) as client:
        jobs = client.get("/v1/cluster").json()["jobs"]
        assert [j["lease_s"] for j in jobs] == [None]


@pytest.mark.parametrize("lease", [0.0, -1.0, 1e12, "10", True])
def test_a_bad_lease_is_refused(lease):
    with _client() as client:
        assert _place(client, lease_s=lease).status_code == 422


def test_reported_step_times_refit_the_model_off_the_request_path(tmp_path):
    """Three runs of two jobs report step times twice their prediction: a refit brings predictions to the reports.

    Each job has its own compute rate (one constant per job), so a fit needs a row more than jobs."""
    with _client(tmp_path) as client:
        jobs = []
        for name in ("job0", "job0", "job1"):
            jobs.append(client.post("/v1/placements", json={"graph": _matmul_chain(name), "beta": 1.0}).json())
        for job in jobs:
            reported = 2 * job["predicted_iteration_s"]
            response = client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": reported})
            assert response.status_code == 202
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        assert state["measurements"] == 3 and state["needed"] == 3 and state["refits"] >= 1 and state["last_error"] is None
        assert state["median_error"] < 0.01
        own = {f"jobs.{jobs[i]['graph_key']}.compute_scale": 0.5 for i in (0, 2)}  # a graph's own terms: by its content key
        assert state["fitted"] == pytest.approx(own, rel=1e-3)
        for job in jobs:
            client.delete(f"/v1/jobs/{job['job_id']}")
        again = client.post("/v1/placements", json={"graph": _matmul_chain("job0"), "beta": 1.0}).json()
        assert again["predicted_iteration_s"] == pytest.approx(2 * jobs[0]["predicted_iteration_s"], rel=0.01)
    with _client(tmp_path) as client:  # rows kept in the store: the refit is restored at start
        client.app.state.occupancy.refitter.wait()
        assert client.get("/v1/calibration").json()["measurements"] == 3
        again = client.post("/v1/placements", json={"graph": _matmul_chain("job0"), "beta": 1.0}).json()
        assert again["predicted_iteration_s"] == pytest.approx(2 * jobs[0]["predicted_iteration_s"], rel=0.01)


@pytest.mark.parametrize(
    ("step_time", "message"),
    [
        (float("nan"), "finite number"),
        (-1.0, "greater than 0"),
        (0.0, "greater than 0"),
        (1e9, "less than or equal to 100000"),
        ("0.5", "valid number"),
        (1e-9, "faster than"),
    ],
)
def test_absurd_step_times_get_422_and_change_nothing(step_time, message):
    with _client() as client:
        job = _place(client).json()
        body = json.dumps({"step_time_s": step_time}, allow_nan=True)
        response = client.post(f"/v1/jobs/{job['job_id']}/step-times", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422 and message in response.text
        assert client.get("/v1/calibration").json()["measurements"] == 0


def test_a_report_that_contradicts_an_earlier_one_is_refused():
    with _client() as client:
        job = _place(client).json()
        assert client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": 7.0}).status_code == 202
        second = client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": 14.0})
        assert second.status_code == 422 and "2.0x apart" in second.json()["detail"]
        assert client.get("/v1/calibration").json()["measurements"] == 1


def test_the_graph_cache_is_bounded_by_bytes():
    with _client(cache_bytes=2 * 10 * BYTES_PER_GRAPH_ELEMENT) as client:  # half for graphs: 10 elements
        for i in range(4):
            client.post("/v1/placements", json={"graph": chain().to_dict() | {"name": f"g{i}"}, "beta": 1.0})
        graphs = client.app.state.occupancy.graphs
        assert len(graphs) == 3 and graphs.bytes == 9 * BYTES_PER_GRAPH_ELEMENT  # chain: 2 ops + 1 edge


@pytest.fixture
def live():
    app = create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(max_body_bytes=10_000, body_timeout_s=0.5))
    with running(loopback(app)) as port:
        yield port


def test_a_body_that_stops_midway_gets_408(live):
    with socket.create_connection(("127.0.0.1", live), timeout=10) as sock:
        sock.sendall(b"POST /v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{")
        started = time.monotonic()
        chunks = []
        while chunk := sock.recv(4096):  # the server closes the connection after the answer; headers and body may come apart
            chunks.append(chunk)
        answer = b"".join(chunks).decode()
    assert answer.startswith("HTTP/1.1 408") and "not received within 0.5 s" in answer
    assert time.monotonic() - started < 5
