"""Crash hygiene (issue 54, item 5): a real `placer serve` killed with SIGKILL leaves no process behind."""

from __future__ import annotations

import os
import signal
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
