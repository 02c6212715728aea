"""Bodies that are no graph cost bounded time and memory (audit 2026-11-26, finding a): scanned before they are parsed."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.bench_service import synthetic_graph
from placer.serve.bodyscan import MAX_UNKNOWN_KEYS, max_values, scan
from placer.serve.schemas import bounded_request
from tests.placer.serve.subprocess_server import free_port, write_toy_cluster
from tests.placer.toys import chain

MODEL = bounded_request(20_000, 60_000)
BODY_BYTES = 8 * 1024 * 1024 - 200  # under the default --max-body-mb of 8


def _scan(body: bytes) -> tuple[int, int] | None:
    return scan(body, MODEL, 20_000, 60_000)


def _unknown_keys(n: int, key: bytes = b'"k%d":1') -> bytes:
    return b"{" + b",".join(key % j if b"%d" in key else key for j in range(n)) + b"}"


def test_a_graph_at_the_limits_passes_the_scan():
    for indent in (None, 1):
        body = json.dumps({"graph": synthetic_graph(20_000), "beta": 0.5}, indent=indent).encode()
        assert _scan(body) is None
    assert _scan(json.dumps({"graph": chain().to_dict(), "beta": 0.5, "lease_s": 60}).encode()) is None


def test_unknown_keys_are_counted_however_they_are_written():
    assert _scan(_unknown_keys(MAX_UNKNOWN_KEYS)) is None
    for key in (b'"k%d":1', b'"k%d" :1', b'"\\"beta":1', b'"x\\"pass":1'):  # spaced, or a known name after an escaped quote
        found = _scan(_unknown_keys(MAX_UNKNOWN_KEYS + 1, key))
        assert found is not None and found[0] == MAX_UNKNOWN_KEYS + 1, key
    colons = json.dumps({"graph": chain().to_dict(), "beta": 0.5, "x": ["a:b" * 10, ":" * 5000, '"k":' * 5000]}).encode()
    assert _scan(colons) is None  # colons and keys inside strings are no keys


def test_values_are_counted_outside_strings():
    limit = max_values(20_000, 60_000)
    assert _scan(b'{"beta":[' + b",".join([b"0"] * limit) + b"]}") == (0, limit + 1)
    assert _scan(b'{"beta":"' + b"," * (2 * limit) + b'"}') is None


def test_the_scan_reads_each_byte_once_whatever_the_body():
    for body in (b'{"beta":"' + b'\\"' * 4_000_000, b'"' + b"\\" * 8_000_000, b"[" * 4_000_000, b'{"' * 2_000_000):
        started = time.monotonic()
        _scan(body)
        assert time.monotonic() - started < 2  # an unterminated string read from each of its quotes would take hours


def _peak_mb(pid: int) -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1)) // 1024  # type: ignore[union-attr]


def _send(port: int, path: str, body: bytes) -> tuple[int, bytes, float]:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        s.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[-1], time.monotonic() - started


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the server's peak memory from Linux's /proc")
def test_hostile_bodies_are_refused_quickly_in_bounded_memory_on_a_real_server(tmp_path):
    """The audit's 8 MiB bodies: 700,000 unknown keys took 9-12 s and +940 MB of peak RSS (the same to a step-time
    report: 10 s, +914 MB), a million small objects +483 MB, 4 million zeros +269 MB."""
    write_toy_cluster(tmp_path, 8, 8)
    port = free_port()
    args = ["--cluster", str(tmp_path / "toy.toml"), "--heuristic", "fixed:1", "--port", str(port), "--memory-only"]
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 (the child holds it)
    server = subprocess.Popen([sys.executable, "-m", "placer", "serve", *args], stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        small = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()
        while True:
            assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                assert _send(port, "/v1/placements", small)[0] == 200
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        before = _peak_mb(server.pid)
        bodies = [
            ("/v1/placements", _unknown_keys(BODY_BYTES // 12), 422, b"keys that are no field"),
            ("/v1/jobs/x/step-times", _unknown_keys(BODY_BYTES // 12), 413, b"over 4096 bytes"),
            ("/v1/placements", b'{"beta":0.5,"zz":[' + b",".join([b'{"a":1}'] * 1_000_000) + b"]}", 422, b"no field"),
            ("/v1/placements", b'{"beta":[' + b",".join([b"0"] * 4_000_000) + b"]}", 413, b"JSON values"),
        ]
        for path, body, status, said in bodies:
            got, answer, elapsed = _send(port, path, body[: 8 * 1024 * 1024])
            assert elapsed < 3, (path, elapsed)  # was 9-12 s for the unknown keys
            assert (got, said in answer) == (status, True), (path, got, answer[:200])
        growth = _peak_mb(server.pid) - before
        assert growth < 120, growth  # the body (received and joined) and one scanned copy of it
        assert _send(port, "/v1/placements", small)[0] == 200
    finally:
        server.terminate()
        server.wait(30)
        log.close()
