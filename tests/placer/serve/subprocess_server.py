"""A real ``placer serve`` in its own process, for the tests that kill it, restart it or read its memory."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(tmp_path: Path, port: int, *options: str, capture: bool = False, wait_s: float = 60.0) -> subprocess.Popen:
    """``placer serve`` of ``tmp_path/toy.toml`` with ``fixed:1`` on ``port``, its state in ``tmp_path/state.sqlite3``,
    ``options`` appended; returned once ``/v1/health`` answers 200. ``capture``: stdout and stderr are the process's pipes
    (text), else stderr goes to ``tmp_path/server.log``. AssertionError with the end of its log if it does not start."""
    cluster, state = str(tmp_path / "toy.toml"), str(tmp_path / "state.sqlite3")
    command = [sys.executable, "-m", "placer", "serve", "--cluster", cluster, "--heuristic", "fixed:1", "--port", str(port)]
    log = tmp_path / "server.log"
    output = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} if capture else {"stdout": subprocess.DEVNULL, "stderr": log.open("a")}
    proc = subprocess.Popen([*command, "--state", state, *options], text=True, **output)  # type: ignore[call-overload]
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    said = proc.stderr.read() if capture and proc.stderr else log.read_text()
    raise AssertionError("server did not start: " + said[-2000:])


def write_toy_cluster(tmp_path: Path, servers: int, devices_per_server: int) -> Path:
    """``tmp_path/toy.toml``: ``servers`` x ``devices_per_server`` 80 GB devices, 8 GB/s inside a server, 1 GB/s across."""
    path = tmp_path / "toy.toml"
    path.write_text(
        f'name = "toy{servers}x{devices_per_server}"\n'
        "[device_types.gpu]\nmemory_bytes = 80e9\nspeed = 1.0\n"
        f'[[servers]]\ncount = {servers}\ndevices_per_server = {devices_per_server}\ndevice_type = "gpu"\n'
        "[links.intra_server]\nbandwidth_Bps = 8e9\nlatency_s = 0.0\n"
        "[links.inter_server]\nbandwidth_Bps = 1e9\nlatency_s = 0.0\n"
    )
    return path
