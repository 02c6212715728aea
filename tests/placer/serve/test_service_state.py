"""State files the audit damaged: each is one line naming the file at start (a :class:`ReservationStateError`), never a
traceback or a 500 later."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.serve.errors import ReservationStateError
from placer.serve.http import create_app
from placer.serve.reservations import Reservation, ReservationStore, StoredMeasurement
from placer.serve.settings import ServiceSettings
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(2, 2, inter=(1e9, 0.0))
DEVICES = [CLUSTER.device_name(d) for d in range(CLUSTER.num_devices)]


def _store(path, **kwargs) -> ReservationStore:
    return ReservationStore(path, cluster=CLUSTER.name, devices=DEVICES, **kwargs)


def _app(path):
    return create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(state_path=path))


def _filled(path, reservations: int = 1) -> None:
    store = _store(path)
    for i in range(reservations):
        store.add(Reservation(f"j{i}", "g" * 200, (DEVICES[i % len(DEVICES)],), 1.0, 2.0) if i < len(DEVICES) else None)
    store.close()


def _sql(path, *statements: str) -> None:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("UPDATE reservations SET reserved_at_s = 1e308", "row 1: reserved_at_s must be a finite number in [0, 2.53402e+11]"),
        ("UPDATE reservations SET predicted_jct_s = 1e300", "row 1: predicted_jct_s must be a finite number in [0, 1e+12]"),
        ("ALTER TABLE reservations DROP COLUMN predicted_jct_s", "table reservations: no predicted_jct_s"),
        ("DROP TABLE measurements; CREATE TABLE measurements (x)", "table measurements: no devices, no graph_key"),
        ("DROP TABLE idempotency; CREATE TABLE idempotency (key, request_sha256, response, extra)", "table idempotency: unknown extra"),
        ("DELETE FROM meta", "names no cluster (meta rows missing)"),
    ],
)
def test_a_damaged_state_file_is_one_line_at_start(tmp_path, damage, message):
    path = tmp_path / "s.sqlite3"
    _filled(path)
    with sqlite3.connect(path) as db:
        db.executescript(damage)
    db.close()
    with pytest.raises(ReservationStateError, match=re.escape(message)) as caught:
        _app(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_without_meta_rows_and_without_state_is_adopted(tmp_path):
    path = tmp_path / "s.sqlite3"
    _store(path).close()
    _sql(path, "DELETE FROM meta")
    _store(path).close()


def test_a_corrupt_page_is_one_line_at_start(tmp_path):
    path = tmp_path / "s.sqlite3"
    _filled(path, reservations=4)
    _sql(path, "PRAGMA journal_mode=DELETE")
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) >= 3 * page
    data[2 * page + 8 : 3 * page] = b"\xff" * (page - 8)  # a table's page (not the header): garbage
    path.write_bytes(bytes(data))
    with pytest.raises(ReservationStateError, match="--reset-state") as caught:
        _app(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(("step_time_s", "message"), [(0.0, "step_time_s must be > 0"), (1e9, "step_time_s must be a finite number")])
def test_stored_step_times_are_checked_again_at_start(tmp_path, step_time_s, message):
    path = tmp_path / "s.sqlite3"
    store = _store(path)
    store.add_measurement(StoredMeasurement(chain().key, (DEVICES[0],), 1.0, 1.0), json.dumps(chain().to_dict()))
    store.close()
    _sql(path, f"UPDATE measurements SET step_time_s = {step_time_s}")
    with pytest.raises(ReservationStateError, match=message):
        _app(path)


def test_an_idempotent_retry_is_matched_on_its_json_not_its_bytes():
    body = {"graph": chain().to_dict(), "beta": 1.0}
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings())) as client:
        headers = {"content-type": "application/json", "Idempotency-Key": "k"}
        first = client.post("/v1/placements", content=json.dumps(body), headers=headers)
        again = client.post("/v1/placements", content=json.dumps(body, indent=2), headers=headers)
        assert first.status_code == again.status_code == 200 and first.json() == again.json()
        other = client.post("/v1/placements", json={**body, "beta": 0.5}, headers={"Idempotency-Key": "k"})
        assert other.status_code == 422


def test_a_lease_that_ran_out_before_a_restart_is_410_after_it(tmp_path):
    from placer.serve.clock import Clock

    now = [1000.0]
    clock = Clock(monotonic=lambda: now[0], wall=lambda: now[0])
    settings = ServiceSettings(state_path=tmp_path / "s.sqlite3")
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), settings, clock)) as client:
        job = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0, "lease_s": 5.0}).json()
        now[0] = 1010.0
        assert client.delete(f"/v1/jobs/{job['job_id']}").status_code == 410  # freed by this server
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), settings, clock)) as client:
        assert client.delete(f"/v1/jobs/{job['job_id']}").status_code == 410  # and still known after a restart
        assert client.delete("/v1/jobs/never").status_code == 404


def test_a_full_disk_is_503_and_changes_nothing(tmp_path):
    with TestClient(_app(tmp_path / "s.sqlite3")) as client:
        db = client.app.state.occupancy.store._db
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")  # what SQLite says on a full disk
        body = {"graph": chain().to_dict(), "beta": 1.0}
        responses = [client.post("/v1/placements", json=body, headers={"Idempotency-Key": f"{i:03d}" * 80}) for i in range(1, 60)]
        refused = [r for r in responses if r.status_code != 200]
        assert refused and all(r.status_code == 503 and "retry later" in r.json()["detail"] for r in refused)
        accepted = sum(r.status_code == 200 and r.json()["accepted"] for r in responses)
        assert len(client.get("/v1/cluster").json()["jobs"]) == accepted


def test_stored_step_times_faster_than_the_devices_allow_are_refused_at_start(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = _store(path)
    store.add_measurement(StoredMeasurement(chain().key, (DEVICES[0],), 1.0, 1.0), json.dumps(chain().to_dict()))
    store.close()
    _sql(path, "UPDATE measurements SET step_time_s = 1e-9")
    with pytest.raises(ReservationStateError, match="stored step times: ") as caught:
        _app(path)
    assert str(path) in str(caught.value)
