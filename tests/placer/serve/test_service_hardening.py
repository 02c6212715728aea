"""The audit's holes, each closed: the state file, graph shapes, error bodies, names, access, start-up."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.common.errors import PlacerError
from placer.serve.http import create_app
from placer.serve.reservations import Reservation, ReservationStore
from placer.serve.settings import ServiceSettings
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(2, 2, inter=(1e9, 0.0))
DEVICES = [CLUSTER.device_name(d) for d in range(CLUSTER.num_devices)]


def _store(path, **kwargs) -> ReservationStore:
    return ReservationStore(path, cluster=CLUSTER.name, devices=DEVICES, **kwargs)


def _app(**kwargs):
    return create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**kwargs))


# The state file


def test_a_second_server_on_one_state_file_is_refused_until_the_first_stops(tmp_path):
    first = _store(tmp_path / "s.sqlite3")
    with pytest.raises(PlacerError, match="is in use by another placer serve"):
        _store(tmp_path / "s.sqlite3")
    first.close()
    _store(tmp_path / "s.sqlite3").close()


def _write_row(path, *row) -> None:
    _store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO reservations (job_id, graph, devices, reserved_at_s, predicted_jct_s) VALUES (?, ?, ?, ?, ?)", row)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("j1", "g", "[not json", 1.0, 2.0)], "row 1: devices must be a JSON list"),
        ([("j1", "g", '["s9-g9"]', 1.0, 2.0)], "row 1: unknown device 's9-g9'"),
        ([("j1", "g", "null", 1.0, 2.0)], "row 1: devices must be a JSON list"),
        ([("j1", "g", '["s0-g0"]', "yesterday", 2.0)], "row 1: reserved_at_s must be a finite number"),
        ([("j1", "g", '["s0-g0"]', 1.0, float("inf"))], "row 1: predicted_jct_s must be a finite number"),
        (
            [("j1", "g", '["s0-g0"]', 1.0, 2.0), ("j2", "g", '["s0-g1", "s0-g0"]', 1.5, 2.0)],
            "row 2: device 's0-g0' is held by job 'j1' too",
        ),
    ],
)
def test_rows_that_make_no_sense_are_named_with_the_file(tmp_path, rows, message):
    path = tmp_path / "s.sqlite3"
    for row in rows:
        _write_row(path, *row)
    store = _store(path)
    with pytest.raises(PlacerError, match=message) as caught:
        store.load()
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_corrupt_row_stops_the_service_from_starting(tmp_path):
    path = tmp_path / "s.sqlite3"
    _write_row(path, "j1", "g", '["s0-g0", "s0-g0"]', 1.0, 2.0)
    with pytest.raises(PlacerError, match="distinct device names"):
        _app(state_path=path)


def test_a_state_file_this_user_cannot_write_is_refused_at_start(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite3"
    _store(path).close()
    path.chmod(0o444)
    if os.access(path, os.W_OK):  # root writes read-only files: pretend to be another user
        monkeypatch.setattr("placer.serve.reservations.os.access", lambda p, mode: False)
    try:
        with pytest.raises(PlacerError, match="is not readable and writable by this user"):
            _store(path)
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize("damage", ["empty file", "dropped table", "not a database"])
def test_an_unusable_store_needs_reset_state_to_start_empty(tmp_path, damage):
    path = tmp_path / "s.sqlite3"
    store = _store(path)
    store.add(Reservation("j1", "g", ("s0-g0",), 1.0, 2.0))
    store.close()
    if damage == "empty file":
        path.write_bytes(b"")
    elif damage == "dropped table":
        with sqlite3.connect(path) as db:
            db.execute("DROP TABLE reservations")
    else:
        path.write_bytes(b"these are not the droids" * 100)
    with pytest.raises(PlacerError, match="--reset-state"):
        _store(path)
    fresh = _store(path, reset=True)
    assert fresh.load() == []
    fresh.close()


def test_an_explicit_state_folder_must_exist(tmp_path):
    with pytest.raises(PlacerError, match="does not exist"):
        _store(tmp_path / "missing" / "s.sqlite3")
    _store(tmp_path / "made" / "s.sqlite3", create_folder=True).close()
    assert (tmp_path / "made" / "s.sqlite3").exists()


def test_a_clean_stop_leaves_no_wal_or_shm_file(tmp_path):
    path = tmp_path / "s.sqlite3"
    with TestClient(_app(state_path=path)) as client:
        assert client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}).json()["accepted"]
        assert (tmp_path / "s.sqlite3-wal").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite3", "s.sqlite3.lock"]
    assert len(_store(path).load()) == 1


# Graph documents and error bodies


def _with(mutate):
    graph = chain().to_dict()
    mutate(graph)
    return graph


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda g: g["graph"]["nodes"][0].pop("name"), "graph: node 'a' field 'name' is missing"),
        (lambda g: g.update(profiled_on={"device": {"x": 1}, "precision": "fp32"}), "field 'profiled_on.device' must be a string"),
        (lambda g: g.update(profiled_on={"device": ["V100-16GB"], "precision": "fp32"}), "field 'profiled_on.device' must be a string"),
        (lambda g: g.update(profiled_on={"device": "V100-16GB", "precision": {}}), "field 'profiled_on.precision' must be a string"),
        (lambda g: g.update(profiled_on={"device": "V100-16GB", "precision": "fp8"}), "precision must be one of"),
        (lambda g: g.update(profiled_on={"device": "H900", "precision": "fp32"}), "profiled_on device 'H900' is unknown"),
        (lambda g: g.update(precision=["fp32"]), "field 'precision' must be a string"),
        (lambda g: g.update(schema_version=True), "unsupported schema_version True"),
        (lambda g: g.update(schema_version=1.5), "unsupported schema_version 1.5"),
        (lambda g: g.update(name="n" * 257), "at most 256"),
    ],
)
def test_graph_shapes_that_gave_a_500_get_a_422(mutate, message):
    with TestClient(_app()) as client:
        response = client.post("/v1/placements", json={"graph": _with(mutate), "beta": 1.0})
    assert response.status_code == 422 and message in response.text, response.text[:300]


def test_error_bodies_are_capped_whatever_the_input():
    huge = "x" * 2_000_000
    with TestClient(_app()) as client:
        cases = [
            {"graph": _with(lambda g: g["graph"]["nodes"][0].update(id=huge)), "beta": 1.0},
            {"graph": _with(lambda g: g.update(name=huge)), "beta": 1.0},
            {"graph": _with(lambda g: g["graph"]["nodes"][0].update(**{huge: 1})), "beta": 1.0},
            {"graph_key": huge, "beta": 1.0},
            {"graph": chain().to_dict(), "beta": 1.0, huge: 1},
        ]
        for body in cases:
            response = client.post("/v1/placements", json=body)
            assert 400 <= response.status_code < 500 and len(response.content) < 4096, (response.status_code, len(response.content))
        assert len(client.delete("/v1/jobs/" + "y" * 20_000).content) < 4096


# Access


def test_a_token_guards_every_route_but_health():
    with TestClient(_app(token="s3cret")) as client:
        body = {"graph": chain().to_dict(), "beta": 1.0}
        assert client.get("/v1/health").status_code == 200
        assert client.get("/v1/cluster").status_code == 401
        assert client.post("/v1/placements", json=body).status_code == 401
        assert client.get("/v1/cluster", headers={"Authorization": "Bearer wrong"}).status_code == 401
        good = {"Authorization": "Bearer s3cret"}
        job = client.post("/v1/placements", json=body, headers=good).json()["job_id"]
        assert client.delete(f"/v1/jobs/{job}").status_code == 401
        assert client.delete(f"/v1/jobs/{job}", headers=good).status_code == 200


def test_a_request_naming_another_host_is_refused():
    with TestClient(_app(allowed_hosts=["127.0.0.1", "localhost"]), base_url="http://localhost") as client:
        assert client.get("/v1/health").status_code == 200
        assert client.get("/v1/health", headers={"Host": "attacker.example"}).status_code == 400


# Start-up


def _serve(*args, env=None, cwd=None):
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def test_start_up_mistakes_are_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
        token = tmp_path / "token"
        token.write_text(secrets.token_urlsafe(32))
        token.chmod(0o600)
        cases = [
            (["--port", "99999"], "Invalid value for '--port'"),
            (["--port", "-5"], "Invalid value for '--port'"),
            (["--port", port, "--memory-only"], f"cannot bind to 127.0.0.1:{port}"),
            (["--host", "no.such.host.invalid", "--token-file", str(token)], "cannot bind to host 'no.such.host.invalid'"),
            (["--host", "0.0.0.0"], "give a token"),
            (["--state", str(tmp_path / "missing" / "s.sqlite3"), "--port", "0"], "does not exist"),
        ]
        for args, message in cases:
            result = _serve(*args, env=env)
            assert result.returncode == 2 and message in result.stderr, (args, result.stderr[-500:])
            assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_store_of_the_first_version_is_upgraded_in_place(tmp_path):
    """Files written before leases and idempotency keys (five columns, two tables) load, and keep their reservations."""
    path = tmp_path / "s.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE reservations (job_id TEXT PRIMARY KEY, graph TEXT NOT NULL, devices TEXT NOT NULL,"
            " reserved_at_s REAL NOT NULL, predicted_jct_s REAL NOT NULL);"
        )
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("cluster", CLUSTER.name), ("devices", json.dumps(DEVICES))])
        db.execute("INSERT INTO reservations VALUES ('j1', 'g', '[\"s0-g1\"]', 1.0, 2.0)")
    store = _store(path)
    assert store.load() == [Reservation("j1", "g", ("s0-g1",), 1.0, 2.0, None, None, None)]
    store.close()
