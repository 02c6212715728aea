"""Issue 54 on a real loopback socket: slow readers, a team behind one address, forged X-Forwarded-For."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from placer.serve.server import make_server
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import running
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(2, 4, inter=(1e9, 0.0))
BODY = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()
TOKEN = "t0ken"


@contextlib.contextmanager
def served(**settings):
    """A live server on loopback: (port, its connection guard)."""
    settings = ServiceSettings(**{"header_timeout_s": 2.0, **settings})
    app = create_app(CLUSTER, make_heuristic("fixed:1"), settings)
    server = make_server(app, settings, log_level="error")
    with running(server) as port:
        yield port, server.guard


def call(port, method="POST", path="/v1/placements", body=BODY, headers=None, source="127.0.0.1", timeout=10.0):
    """(status, body, Retry-After) of one request on its own connection from ``source``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("Retry-After")
    finally:
        conn.close()


def slow_reader(port: int, source: str, pipelined: int = 400, headers: bytes = b"") -> socket.socket:
    """A connection with a 4 KB receive buffer that pipelines ``pipelined`` GET /openapi.json and never reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % headers * pipelined)
    return sock


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# Slow readers


@pytest.mark.parametrize("token", [None, TOKEN])
def test_slow_readers_cannot_keep_health_or_a_placement_from_a_normal_client(token):
    """The audit's attack: 68 connections from 5 addresses pipelining 400 GETs each, never reading. It made every route
    503 for as long as they stayed. Without a token their answers (16 KB) soon pause their writes; with one they get
    401s, small and cheap: a flood that keeps every connection busy without pausing."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    with served(token=token, send_timeout_s=60) as (port, guard), contextlib.ExitStack() as stack:
        for i in range(68):
            stack.enter_context(slow_reader(port, f"127.0.0.{2 + i % 5}"))
        if token is None:
            assert wait_for(lambda: sum(c.stalled for c in guard.open) == 68, 10)
        else:
            time.sleep(1.0)
            assert len(guard.open) == 68 and not any(c.stalled for c in guard.open)
        for _ in range(3):
            started = time.monotonic()
            assert call(port, "GET", "/v1/health", None)[0] == 200
            assert call(port, headers=auth)[0] == 200
            assert time.monotonic() - started < 5
        assert guard.send_timed_out == 0  # room was made by closing a reader, not by waiting for the send timeout
        assert (guard.evicted_pipelining if token else guard.evicted_stalled) >= 1


def test_slow_readers_are_aborted_after_the_send_timeout():
    with served(send_timeout_s=1.0) as (port, guard), contextlib.ExitStack() as stack:
        readers = [stack.enter_context(slow_reader(port, f"127.0.0.{2 + i % 2}")) for i in range(6)]
        assert wait_for(lambda: sum(c.stalled for c in guard.open) == 6, 5)  # every one's writes are paused
        assert wait_for(lambda: guard.send_timed_out == 6, 3) and not guard.open
        openapi = len(call(port, "GET", "/openapi.json", None)[1])
        for sock in readers:  # reset: what the server had queued was dropped (400 answers were asked for)
            got = 0
            with pytest.raises(ConnectionResetError):  # noqa: PT012
                while data := sock.recv(1 << 16):
                    got += len(data)
            assert got < 20 * openapi
        assert call(port)[0] == 200


def test_a_request_whose_answer_is_not_read_holds_no_request_slot():
    """Two request slots, six readers whose answers wait to be written: placements still get in."""
    with served(max_connections=2, max_connections_per_client=16, send_timeout_s=60) as (port, guard), contextlib.ExitStack() as stack:
        for _ in range(4):
            stack.enter_context(slow_reader(port, "127.0.0.2"))
        assert wait_for(lambda: sum(c.stalled for c in guard.open) == 4, 5)
        assert [call(port)[0] for _ in range(3)] == [200] * 3


# A team behind one address


def concurrently(count: int, work) -> list:
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work()
        except OSError as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_48_concurrent_placements_from_one_address_get_answers_never_resets():
    """Before: 18 resets and 60 x 503 out of 96 (a request's body cut by the per-client cap, a refusal closed unread)."""
    with served() as (port, guard):
        results = concurrently(48, lambda: call(port, timeout=30))
        errors = [r for r in results if isinstance(r, Exception)]
        assert errors == []
        statuses = [status for status, _, _ in results]
        assert all(200 <= s < 300 or s in (429, 503) for s in statuses), statuses
        assert all(retry for status, _, retry in results if status in (429, 503))
        assert statuses.count(200) >= 16  # the address's 16 connections were answered
        assert guard.evicted_slow == 0  # no connection receiving a request was closed


def test_a_refused_connection_reads_its_503_after_sending_a_large_body():
    """The answer is written, writing shut down and the body read and discarded: no reset, whatever the client sends."""
    head = b"POST /v1/placements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    with served(max_connections_per_client=1) as (port, _), contextlib.ExitStack() as stack:
        busy = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
        busy.sendall(head % 5000 + b"{")  # a body on the way: never closed to make room for its address
        time.sleep(0.2)
        status, text, retry = call(port, body=b" " * 2_000_000)
        assert (status, retry) == (503, "1") and b"from this address" in text
        busy.sendall(b" " * 4999)
        assert busy.recv(4096).startswith(b"HTTP/1.1 422")  # the held request was answered


# Forwarded addresses


def _reports(port: int, count: int, source: str = "127.0.0.1") -> list[int]:
    """The statuses of ``count`` step-time reports, each naming another client in X-Forwarded-For."""
    placed = json.loads(call(port)[1])
    job, step = placed["job_id"], placed["predicted_iteration_s"]
    report = json.dumps({"step_time_s": step}).encode()
    path = f"/v1/jobs/{job}/step-times"
    return [call(port, body=report, path=path, headers={"X-Forwarded-For": f"10.0.0.{i + 1}"}, source=source)[0] for i in range(count)]


def test_a_forged_x_forwarded_for_is_ignored_without_a_trusted_proxy():
    """uvicorn's default trusted it from loopback: 60 of 60 reports were accepted against a burst of 20."""
    with served(report_burst=5, report_rate_per_s=0.01) as (port, _):
        assert _reports(port, 12) == [202] * 5 + [429] * 7


def test_x_forwarded_for_is_honoured_from_a_trusted_proxy_alone():
    with served(report_burst=5, report_rate_per_s=0.01, trusted_proxies=("127.0.0.1",)) as (port, _):
        assert _reports(port, 12) == [202] * 12  # each forwarded client has its own bucket
        assert _reports(port, 8, source="127.0.0.2") == [202] * 5 + [429] * 3  # another peer's header is ignored


def test_a_trusted_proxy_is_not_held_to_the_per_client_connection_cap():
    head = b"POST /v1/placements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"
    for proxies, expected in (((), 503), (("127.0.0.0/30",), 200)):
        with served(max_connections_per_client=2, trusted_proxies=proxies) as (port, _), contextlib.ExitStack() as stack:
            for _ in range(4):  # bodies on the way: a per-client cap never closes them
                stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10)).sendall(head)
            time.sleep(0.2)
            assert call(port)[0] == expected


def test_trusted_proxies_must_be_addresses_or_networks():
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
    for args, message in (
        (["--trusted-proxy", "proxy.internal"], "--trusted-proxy 'proxy.internal' is not an IP address or network"),
        (["--send-timeout-s", "0"], "--send-timeout-s"),
    ):
        command = [sys.executable, "-m", "placer", "serve", "--memory-only", "--port", "0", *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr[-500:]
    assert ServiceSettings(trusted_proxies=("10.0.0.1", "fd00::/64")).trusted_proxies == ("10.0.0.1/32", "fd00::/64")
    for bad in ("*", "proxy.internal", "10.0.0.0/33"):
        with pytest.raises(ValueError, match="is not an IP address or network"):
            ServiceSettings(trusted_proxies=(bad,))


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_over_the_limit_gets_its_413_not_a_reset(declared):
    """uvicorn closes after a refusal while the body is still arriving: closed unread, the connection was reset."""
    body = b"[" + b" " * 3_000_000 + b"]"
    with served(max_body_bytes=100_000) as (port, _):
        if declared:
            assert call(port, body=body)[0] == 413
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request(
                "POST",
                "/v1/placements",
                body=iter([body[i : i + 65536] for i in range(0, len(body), 65536)]),
                headers={"Content-Type": "application/json"},
                encode_chunked=True,
            )
            response = conn.getresponse()
            assert response.status == 413 and b"over 100000 bytes" in response.read()
            conn.close()
