"""Reservations survive kill -9: a real `placer serve` process, killed mid-load and restarted."""

import os
import signal
import threading
import time

import httpx

from tests.placer.serve.subprocess_server import free_port, start_serve, write_toy_cluster
from tests.placer.toys import chain


def test_no_acknowledged_reservation_is_lost_or_double_booked_after_kill_9(tmp_path):
    write_toy_cluster(tmp_path, 4, 4)
    port = free_port()
    first = start_serve(tmp_path, port, capture=True)
    body = {"graph": chain().to_dict(), "beta": 1.0}
    acknowledged: dict[str, list[str]] = {}
    lock = threading.Lock()

    def client():
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as c:
            for _ in range(30):
                try:
                    r = c.post("/v1/placements", json=body)
                except httpx.HTTPError:
                    return  # the server died mid-request: nothing was acknowledged
                if r.status_code == 200 and r.json()["accepted"]:
                    with lock:
                        acknowledged[r.json()["job_id"]] = r.json()["devices"]

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    while len(acknowledged) < 6:
        time.sleep(0.005)
    os.kill(first.pid, signal.SIGKILL)  # mid-load: clients are still sending
    for t in threads:
        t.join(10)
    first.wait(10)
    assert 6 <= len(acknowledged) <= 16

    second = start_serve(tmp_path, port, capture=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as c:
            held = {job["job_id"]: job["devices"] for job in c.get("/v1/cluster").json()["jobs"]}
            assert {k: held[k] for k in acknowledged} == acknowledged  # every acknowledged reservation survived
            taken = [d for devices in held.values() for d in devices]
            assert len(taken) == len(set(taken))
            while (r := c.post("/v1/placements", json=body).json())["accepted"]:  # fill the rest: never a held device
                assert not set(r["devices"]) & set(taken)
                taken += r["devices"]
            assert len(taken) == 16 and len(set(taken)) == 16
            health = c.get("/v1/health").json()
            assert health["instance_id"] and health["started_at"]
    finally:
        second.terminate()
        second.wait(10)
    assert "restored" in second.stderr.read()  # the startup line
    assert '"POST /v1/placements HTTP/1.1" 200' in second.stdout.read()  # uvicorn's access log


def test_a_state_file_from_another_cluster_is_refused(tmp_path):
    import pytest

    from placer.common.errors import PlacerError
    from placer.serve.reservations import Reservation, ReservationStore

    path = tmp_path / "state.sqlite3"
    store = ReservationStore(path, cluster="a", devices=["s0-g0", "s0-g1"])
    store.add(Reservation("j1", "toy", ("s0-g1",), 1.0, 2.0))
    store.close()
    again = ReservationStore(path, cluster="a", devices=["s0-g0", "s0-g1"])
    assert again.load() == [Reservation("j1", "toy", ("s0-g1",), 1.0, 2.0)]
    again.remove("j1")
    assert again.load() == []
    again.close()  # one server per state file: the next open would find it held
    with pytest.raises(PlacerError, match="belongs to cluster 'a'"):
        ReservationStore(path, cluster="b", devices=["s0-g0"])
