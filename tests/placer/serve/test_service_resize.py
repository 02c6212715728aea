"""Resizing a running job on a real loopback server: ``POST /v1/jobs/{id}/resize`` and its proposal (issue 52, item 4)."""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from placer.serve.reservations import Reservation, ReservationStore
from placer.serve.settings import ServiceSettings
from placer.serve.tenants import Tenant
from placer.sim.elastic import resize_pause_s
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, op, toy_cluster, toy_graph

CLUSTER = toy_cluster(2, 2)  # s0-g0 s0-g1 | s1-g0 s1-g1; the chain takes 6 s a step on one device, 3 s on two
TOKENS = {"alice": secrets.token_urlsafe(32), "bob": secrets.token_urlsafe(32)}


@contextlib.contextmanager
def _serve(tmp_path=None, policy: str = "fixed:1", **settings) -> Iterator[httpx.Client]:
    state = {"state_path": tmp_path / "s.sqlite3"} if tmp_path is not None else {}
    app = create_app(CLUSTER, make_heuristic(policy), ServiceSettings(**state, **settings))
    with running(loopback(app)) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        yield client


def _place(client: httpx.Client, graph=None, **fields) -> dict:
    response = client.post("/v1/placements", json={"graph": (graph or chain()).to_dict(), "beta": 1.0, **fields})
    assert response.status_code == 200 and response.json()["accepted"], response.text
    return response.json()


def _holders(client: httpx.Client) -> dict[str, str | None]:
    return {d["device"]: d["job_id"] for d in client.get("/v1/cluster").json()["devices"]}


def test_a_resize_swaps_the_devices_reads_show_it_and_a_restart_keeps_it(tmp_path):
    with _serve(tmp_path) as client:
        job = _place(client)
        assert job["devices"] == ["s0-g0"] and job["predicted_iteration_s"] == pytest.approx(6.0)
        grown = client.post(f"/v1/jobs/{job['job_id']}/resize", json={"degree": 2})
        assert grown.status_code == 200, grown.text
        answer = grown.json()
        assert answer["devices"][0] == "s0-g0" and len(answer["devices"]) == 2  # it keeps its own device
        assert (answer["degree"], answer["moved"], answer["previous_devices"]) == (2, True, ["s0-g0"])
        assert answer["predicted_iteration_s"] == pytest.approx(3.0) and answer["previous_iteration_s"] == pytest.approx(6.0)
        assert answer["resize_pause_s"] == pytest.approx(resize_pause_s(CLUSTER, chain())) and answer["resize_pause_s"] > 0
        # what was left (one 6 s step) now takes 3 s, after the pause
        assert answer["predicted_jct_s"] == pytest.approx(answer["resize_pause_s"] + 3.0, abs=1.0)
        held = {d for d, j in _holders(client).items() if j == job["job_id"]}
        assert held == set(answer["devices"])
        assert client.get("/v1/cluster").json()["jobs"][0]["devices"] == answer["devices"]
        moved = client.post(f"/v1/jobs/{job['job_id']}/resize", json={"devices": ["s1-g1"]}).json()  # named devices: a migration
        assert (moved["devices"], moved["degree"], moved["moved"]) == (["s1-g1"], 1, True)
        assert _holders(client) == {"s0-g0": None, "s0-g1": None, "s1-g0": None, "s1-g1": job["job_id"]}
        other = _place(client)  # the freed devices are placeable again
        assert other["devices"] == ["s0-g0"]
    with _serve(tmp_path) as client:  # restarted on the same state file
        held = _holders(client)
        assert held["s1-g1"] == job["job_id"] and held["s0-g0"] == other["job_id"]
        assert client.get("/v1/cluster").json()["devices_free"] == 2
        # its graph is not kept across a restart: it cannot be priced, so it cannot be resized (as it cannot report)
        assert client.post(f"/v1/jobs/{job['job_id']}/resize", json={"degree": 2}).status_code == 409


def test_the_same_degree_or_devices_change_nothing():
    with _serve() as client:
        job = _place(client)
        for body in ({"degree": 1}, {"devices": ["s0-g0"]}):
            same = client.post(f"/v1/jobs/{job['job_id']}/resize", json=body).json()
            assert (same["moved"], same["devices"], same["resize_pause_s"]) == (False, ["s0-g0"], 0.0)
            assert same["predicted_jct_s"] == job["predicted_jct_s"]


def test_busy_devices_are_409_and_change_nothing():
    with _serve() as client:
        first, second = _place(client), _place(client)
        url = f"/v1/jobs/{first['job_id']}/resize"
        busy = client.post(url, json={"devices": [first["devices"][0], second["devices"][0]]})
        assert busy.status_code == 409 and f"devices {second['devices'][0]} are held by another job" in busy.json()["detail"]
        assert second["job_id"] not in busy.text  # the holder is not named
        _place(client), _place(client)  # every device held
        too_many = client.post(url, json={"degree": 2})
        assert too_many.status_code == 409 and "has 1 devices free for it" in too_many.json()["detail"]
        assert _holders(client)[first["devices"][0]] == first["job_id"]
        assert client.get("/v1/cluster").json()["devices_free"] == 0


def test_a_graph_that_does_not_fit_is_422_and_bad_requests_too():
    big = toy_graph({"a": op(2.0, 15e9), "b": op(4.0, 15e9)}, {("a", "b"): 8e9}, name="big")  # fits on two devices, not one
    with _serve(policy="fixed:2") as client:
        job = _place(client, big)
        url = f"/v1/jobs/{job['job_id']}/resize"
        small = client.post(url, json={"degree": 1})
        assert small.status_code == 422 and "fits on no placement of 1 devices" in small.json()["detail"]
        named = client.post(url, json={"devices": ["s1-g0"]})
        assert named.status_code == 422 and "does not fit on s1-g0" in named.json()["detail"]
        for body in ({}, {"degree": 1, "devices": ["s0-g0"]}, {"degree": 0}, {"degree": "2"}, {"devices": ["s0-g0", "s0-g0"]}, {"x": 1}):
            assert client.post(url, json=body).status_code == 422, body
        unknown = client.post(url, json={"devices": ["s9-g9"]})
        assert unknown.status_code == 422 and "unknown devices 's9-g9'" in unknown.json()["detail"]
        assert client.post(url, json={"degree": 5}).status_code == 422  # more than the cluster has
        assert client.get("/v1/cluster").json()["jobs"][0]["devices"] == job["devices"]


def test_another_tenant_gets_the_404_of_an_unknown_job():
    tenants = tuple(Tenant(name=name, token=token) for name, token in TOKENS.items())
    with _serve(tenants=tenants) as client:
        alice, bob = ({"Authorization": f"Bearer {TOKENS[name]}"} for name in ("alice", "bob"))
        placed = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}, headers=alice).json()
        theirs = client.post(f"/v1/jobs/{placed['job_id']}/resize", json={"degree": 2}, headers=bob)
        unknown = client.post("/v1/jobs/f00d/resize", json={"degree": 2}, headers=bob)
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.json()["detail"].replace(placed["job_id"], "ID") == unknown.json()["detail"].replace("f00d", "ID")
        assert client.get(f"/v1/jobs/{placed['job_id']}/resize-proposal", headers=bob).status_code == 404
        assert client.post(f"/v1/jobs/{placed['job_id']}/resize", json={"degree": 2}, headers=alice).status_code == 200


def test_a_job_whose_lease_ran_out_is_410():
    with _serve() as client:
        job = _place(client, lease_s=1.0)
        time.sleep(1.5)
        gone = client.post(f"/v1/jobs/{job['job_id']}/resize", json={"degree": 2})
        assert gone.status_code == 410 and "lease ran out" in gone.json()["detail"]
        assert client.get("/v1/cluster").json()["devices_free"] == 4


def test_a_job_within_its_lease_is_resized_and_keeps_its_lease():
    with _serve() as client:
        job = _place(client, lease_s=60.0)
        answer = client.post(f"/v1/jobs/{job['job_id']}/resize", json={"degree": 2}).json()
        held = client.get("/v1/cluster").json()["jobs"][0]
        assert held["devices"] == answer["devices"] and held["lease_s"] == 60.0


def test_a_retry_with_the_same_key_gets_the_first_answer_and_moves_nothing_more(tmp_path):
    with _serve(tmp_path) as client:
        job = _place(client)
        url = f"/v1/jobs/{job['job_id']}/resize"
        first = client.post(url, json={"degree": 2}, headers={"Idempotency-Key": "r-1"})
        assert first.status_code == 200
        client.post(url, json={"devices": ["s1-g1"]})  # moved since
        again = client.post(url, json={"degree": 2}, headers={"Idempotency-Key": "r-1"})
        assert again.json() == first.json()
        assert client.get("/v1/cluster").json()["jobs"][0]["devices"] == ["s1-g1"]  # the retry moved nothing
        other = client.post(url, json={"degree": 1}, headers={"Idempotency-Key": "r-1"})
        assert other.status_code == 422 and "used for a different request" in other.json()["detail"]
        placing = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}, headers={"Idempotency-Key": "r-1"})
        assert placing.status_code == 422  # a placement is another request
    with _serve(tmp_path) as client:  # the answer survives a restart (and the file with it is read back)
        assert client.post(url, json={"degree": 2}, headers={"Idempotency-Key": "r-1"}).json() == first.json()


def test_concurrent_retries_of_one_key_move_once():
    with _serve() as client:
        job = _place(client)
        answers: list[dict] = []

        def grow() -> None:
            answers.append(client.post(f"/v1/jobs/{job['job_id']}/resize", json={"degree": 2}, headers={"Idempotency-Key": "g"}).json())

        threads = [threading.Thread(target=grow) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(answers) == 6 and all(a == answers[0] for a in answers) and answers[0]["moved"]


def test_the_proposal_grows_into_idle_devices_and_changes_nothing():
    with _serve() as client:
        job = _place(client, iterations=1000)  # 6,000 s on one device: the 30 s pause pays
        proposal = client.get(f"/v1/jobs/{job['job_id']}/resize-proposal").json()
        assert proposal["moved"] and proposal["degree"] == 4 and proposal["predicted_iteration_s"] == pytest.approx(1.5)
        assert proposal["predicted_jct_s"] < job["predicted_jct_s"]
        assert client.get("/v1/cluster").json()["devices_free"] == 3
        short = _place(client)  # one step left: no move gains its 30 s pause
        stay = client.get(f"/v1/jobs/{short['job_id']}/resize-proposal").json()
        assert (stay["moved"], stay["devices"]) == (False, short["devices"])


def test_a_failed_swap_leaves_the_old_reservation(tmp_path):
    """The devices and the idempotency answer are one transaction: a write that fails half-way leaves the old row."""
    store = ReservationStore(tmp_path / "s.sqlite3", cluster=CLUSTER.name, devices=[CLUSTER.device_name(d) for d in range(4)])
    try:
        store.add(Reservation("j", "chain", ("s0-g0",), 1000.0, 6.0), answer=("k", "0" * 64, "{}"))
        with pytest.raises(Exception, match="UNIQUE"):
            store.move("j", ("s0-g0", "s0-g1"), 3.0, answer=("k", "1" * 64, "{}"))  # the answer's insert fails
        assert [(r.devices, r.predicted_jct_s) for r in store.load()] == [(("s0-g0",), 6.0)]
        store.move("j", ("s1-g0",), 36.0)
        assert [(r.devices, r.predicted_jct_s) for r in store.load()] == [(("s1-g0",), 36.0)]
    finally:
        store.close()
