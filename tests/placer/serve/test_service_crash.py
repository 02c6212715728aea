"""Crash hygiene (issue 54, item 5) on a real server: no orphan after SIGKILL, an altered state file refused at start, a full
disk refusing writes only, weak tokens refused, cross-site writes refused."""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from placer.baselines.registry import make_heuristic
from placer.ray.service import HttpService
from placer.serve.http import create_app
from placer.serve.reservations import Reservation, ReservationStore
from placer.serve.settings import ServiceSettings
from placer.serve.tokens import MAKE_ONE, MIN_TOKEN_BITS, token_bits
from tests.placer.live_server import loopback, running
from tests.placer.serve.subprocess_server import free_port, start_serve, write_toy_cluster
from tests.placer.toys import chain, toy_cluster

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads child processes from Linux's /proc")


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from each thread's /proc children list)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = {int(k) for k in (task / "children").read_text().split()}
        except OSError:
            continue
        for kid in kids - found:
            found |= {kid, *_children(kid)}
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_the_refit_worker_and_the_resource_tracker_die_with_a_killed_server(tmp_path):
    write_toy_cluster(tmp_path, 4, 4)
    port = free_port()
    server = start_serve(tmp_path, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
            placed = c.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0}).json()
            report = {"step_time_s": 1.2 * placed["predicted_iteration_s"]}
            assert c.post(f"/v1/jobs/{placed['job_id']}/step-times", json=report).status_code == 202  # starts the refit worker
            deadline = time.monotonic() + 60
            while c.get("/v1/calibration").json()["pending"] and time.monotonic() < deadline:
                time.sleep(0.1)
        children = _children(server.pid)
        assert len(children) >= 2, children  # the worker and multiprocessing's resource tracker
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait(10)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in children if _alive(p)]


def test_a_state_file_whose_stored_idempotent_answer_was_altered_is_refused_at_start_in_one_line(tmp_path):
    write_toy_cluster(tmp_path, 4, 4)
    port = free_port()
    server = start_serve(tmp_path, port)
    try:
        body = {"graph": chain().to_dict(), "beta": 1.0}
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/placements", json=body, headers={"Idempotency-Key": "k-1"}, timeout=10)
        assert answer.status_code == 200
        for name in ("state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm", "state.sqlite3.lock"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name  # made by placer serve: this user's only
    finally:
        server.terminate()
        server.wait(10)
    state = tmp_path / "state.sqlite3"
    with sqlite3.connect(state) as db:
        stored = json.loads(db.execute("SELECT response FROM idempotency WHERE key = 'default k-1'").fetchone()[0])
        db.execute("UPDATE idempotency SET response = ? WHERE key = 'default k-1'", (json.dumps({**stored, "accepted": "maybe"}),))
    again = subprocess.run(
        [sys.executable, "-m", "placer", "serve", "--cluster", str(tmp_path / "toy.toml"), "--port", "0", "--state", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 2, again.stderr[-2000:]
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    assert f"reservation state {str(state)!r}, idempotency key 'default k-1': the stored answer is not a placement decision" in again.stderr


class _FullDisk:
    """A SQLite connection whose writes fail as they do on a full disk; reads pass."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __getattr__(self, name: str):
        return getattr(self.db, name)

    def execute(self, sql: str, *args):
        if not sql.lstrip().upper().startswith(("SELECT", "PRAGMA")):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)


def test_a_full_disk_refuses_writes_only_and_is_logged_once_per_episode(tmp_path, caplog):
    cluster, path = toy_cluster(2, 2), tmp_path / "s.sqlite3"
    app = create_app(cluster, make_heuristic("fixed:1"), ServiceSettings(state_path=path))
    store, body = app.state.occupancy.store, {"graph": chain().to_dict(), "beta": 1.0}
    with caplog.at_level(logging.INFO, logger="placer.serve"), running(loopback(app)) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
            leased, held = c.post("/v1/placements", json=body | {"lease_s": 1}).json(), c.post("/v1/placements", json=body).json()
            real, store._db = store._db, _FullDisk(store._db)
            time.sleep(3.5)  # the lease runs out; the sweeper fails to write its expiry three times
            occupancy = c.get("/v1/cluster")
            assert occupancy.status_code == 200 and [j["job_id"] for j in occupancy.json()["jobs"]] == [held["job_id"]]
            assert c.get("/v1/health").status_code == 200 and c.get("/v1/calibration").status_code == 200
            assert c.delete(f"/v1/jobs/{leased['job_id']}").status_code == 410  # freed in memory
            for write in (c.post("/v1/placements", json=body), c.delete(f"/v1/jobs/{held['job_id']}")):
                assert write.status_code == 503 and "retry later" in write.json()["detail"]
            failures = [r for r in caplog.records if "cannot be written" in r.getMessage()]
            assert len(failures) == 1 and not [r for r in caplog.records if r.exc_info]  # one line, no traceback
            store._db = real
            assert c.delete(f"/v1/jobs/{held['job_id']}").status_code == 200  # the expiry is written first, then this
            assert len([r for r in caplog.records if "written again" in r.getMessage()]) == 1
    reopened = ReservationStore(path, cluster=cluster.name, devices=[cluster.device_name(d) for d in range(cluster.num_devices)])
    assert reopened.load() == [] and [j for j, _, _ in reopened.expired()] == [leased["job_id"]]
    reopened.close()


def test_each_write_of_the_store_is_one_transaction(tmp_path):
    """A reservation and its idempotency answer are committed together or not at all (SQLite in autocommit mode made each
    statement its own transaction)."""
    store = ReservationStore(tmp_path / "s.sqlite3", cluster="c", devices=["s0-g0"])
    store.add(None, answer=("k", "a" * 64, "{}"))
    with pytest.raises(sqlite3.IntegrityError):
        store.add(Reservation("j1", "g", ("s0-g0",), 1.0, 2.0), answer=("k", "a" * 64, "{}"))
    assert store.load() == []
    store.close()


def test_token_strength_is_bounded_by_length_alphabet_and_repeats():
    assert token_bits(secrets.token_urlsafe(32)) >= MIN_TOKEN_BITS and token_bits(secrets.token_hex(16)) >= MIN_TOKEN_BITS
    assert token_bits(secrets.token_urlsafe(32)[:21]) < MIN_TOKEN_BITS <= token_bits(secrets.token_urlsafe(32)[:22])
    assert token_bits("1234") == 0 and token_bits("a" * 100) == 0 and token_bits("1234567890" * 3) < MIN_TOKEN_BITS


def _serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--memory-only", "--port", "0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_weak_or_exposed_tokens_are_refused_at_start_in_one_line(tmp_path):
    exposed, weak = tmp_path / "exposed", tmp_path / "weak"
    exposed.write_text(secrets.token_urlsafe(32) + "\n")
    exposed.chmod(0o644)
    weak.write_text("1234\n")
    weak.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
    cases = [
        (["--token-file", str(exposed)], env, f"token file {str(exposed)!r} may be read or written by other users (mode 0644): chmod 600"),
        (["--token-file", str(weak)], env, f"the bearer token from token file {str(weak)!r} is too weak"),
        ([], env | {"PLACER_TOKEN": "1234"}, "the bearer token from PLACER_TOKEN is too weak"),
    ]
    for args, environ, message in cases:
        result = _serve(*args, env=environ)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr[-500:])
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert "chmod" in message or MAKE_ONE in result.stderr


def test_cross_site_writes_are_refused_and_placers_own_client_still_works():
    settings = ServiceSettings(allowed_hosts=("127.0.0.1", "localhost", "placer.internal"))
    with running(loopback(create_app(toy_cluster(2, 2), make_heuristic("fixed:1"), settings))) as port:
        url, json_ = f"http://127.0.0.1:{port}", {"Content-Type": "application/json"}
        service = HttpService(url)
        job = service.place(chain(), beta=1.0, lease_s=60).job_id or ""
        lease = f"/v1/jobs/{job}/lease"
        with httpx.Client(base_url=url, timeout=10) as c:
            refused = [
                c.post(lease),  # bodiless and untyped: what a cross-site no-cors fetch or beacon sends
                c.post(lease, headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}),
                c.post(lease, headers=json_ | {"Sec-Fetch-Site": "cross-site"}),
                c.post(lease, headers=json_ | {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}),
                c.post(lease, headers=json_ | {"Origin": "https://evil.example"}),
                c.post(lease, headers=json_ | {"Origin": "null"}),
                c.delete(f"/v1/jobs/{job}", headers={"Origin": "http://placer.internal.evil.example"}),
            ]
            assert [r.status_code for r in refused] == [415, 403, 403, 403, 403, 403, 403], [r.text for r in refused]
            assert "cross-site request refused" in refused[2].json()["detail"]
            for origin in ({"Origin": url, "Sec-Fetch-Site": "same-origin"}, {"Origin": "https://placer.internal"}, {}):
                assert c.post(lease, headers=json_ | origin).status_code == 200, origin  # same origin, a proxy's name, no browser
        assert service.renew(job).job_id == job and service.occupancy().devices_free == 3
        assert service.release(job).job_id == job
