"""Crash hygiene (issue 54, item 5) on a real `placer serve`: no orphan after SIGKILL, an altered state file refused at start."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.placer.serve.test_service_durability import CLUSTER_TOML, _free_port, _start
from tests.placer.toys import chain

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
    (tmp_path / "toy.toml").write_text(CLUSTER_TOML)
    port = _free_port()
    server = _start(tmp_path, port)
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
    (tmp_path / "toy.toml").write_text(CLUSTER_TOML)
    port = _free_port()
    server = _start(tmp_path, port)
    try:
        body = {"graph": chain().to_dict(), "beta": 1.0}
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/placements", json=body, headers={"Idempotency-Key": "k-1"}, timeout=10)
        assert answer.status_code == 200
    finally:
        server.terminate()
        server.wait(10)
    state = tmp_path / "state.sqlite3"
    with sqlite3.connect(state) as db:
        stored = json.loads(db.execute("SELECT response FROM idempotency WHERE key = 'k-1'").fetchone()[0])
        db.execute("UPDATE idempotency SET response = ? WHERE key = 'k-1'", (json.dumps({**stored, "accepted": "maybe"}),))
    again = subprocess.run(
        [sys.executable, "-m", "placer", "serve", "--cluster", str(tmp_path / "toy.toml"), "--port", "0", "--state", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 2, again.stderr[-2000:]
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    assert f"reservation state {str(state)!r}, idempotency key 'k-1': the stored answer is not a placement decision" in again.stderr
