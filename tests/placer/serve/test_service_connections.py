"""Idle, slow and cross-site peers on a real loopback socket: normal requests are still answered."""

import contextlib
import http.client
import json
import logging
import os
import re
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


SLOW_HEAD = b"POST /v1/placements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


@contextlib.contextmanager
def served(**settings):
    with served_app(**settings) as (port, _):
        yield port


@contextlib.contextmanager
def served_app(**settings):
    """A live server on loopback and its app: (port, app)."""
    settings = ServiceSettings(**{"max_connections": 64, "header_timeout_s": 1.0, "body_timeout_s": 30.0, **settings})
    app = create_app(CLUSTER, make_heuristic("fixed:1"), settings)
    with running(make_server(app, settings, log_level="error")) as port:
        yield port, app


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def request(port: int, method: str = "POST", path: str = "/v1/placements", body: bytes | None = BODY, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the server closes ``sock`` (recv gives b"") within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_seventy_idle_connections_do_not_deny_a_normal_request():
    with served() as port, contextlib.ExitStack() as stack:
        idle = [stack.enter_context(connect(port)) for _ in range(70)]
        started = time.monotonic()
        status, _ = request(port)
        assert status == 200 and time.monotonic() - started < 3
        assert len(idle) == 70


def test_idle_connections_from_many_addresses_do_not_deny_a_normal_request():
    with served() as port, contextlib.ExitStack() as stack:
        for i in range(100):
            stack.enter_context(connect(port, f"127.0.0.{2 + i % 10}"))
        assert request(port)[0] == 200


def test_a_connection_without_complete_headers_is_closed_after_the_header_timeout():
    with served(header_timeout_s=0.5) as port, connect(port) as silent, connect(port) as trickling:
        started = time.monotonic()
        for byte in b"GET /v1/health HTTP/1.1\r\nHost: x":  # one byte per 0.05 s: longer than the timeout in all
            with contextlib.suppress(OSError):
                trickling.send(bytes([byte]))
            time.sleep(0.05)
        assert closed_within(trickling, 3) and closed_within(silent, 3)
        assert time.monotonic() - started < 5


def test_random_bytes_without_a_blank_line_are_not_held():
    with served(header_timeout_s=0.5) as port, connect(port) as sock:
        sock.sendall(b"GET /" + b"x" * 8000)  # a request line that never ends (under h11's 16 KB bound)
        assert closed_within(sock, 3)


def test_slow_bodies_from_one_address_leave_room_for_others():
    with served(max_connections_per_client=8) as port, contextlib.ExitStack() as stack:
        head = SLOW_HEAD % 5000 + b"{"
        for _ in range(63):  # uvicorn alone: 63 held bodies and the next request is 503
            sock = stack.enter_context(connect(port, "127.0.0.2"))
            with contextlib.suppress(OSError):
                sock.sendall(head)
        time.sleep(0.5)
        started = time.monotonic()
        assert request(port)[0] == 200 and time.monotonic() - started < 3


def test_slow_bodies_from_many_addresses_do_not_deny_a_normal_request():
    """More slow bodies than connections, one per address (under every per-address cap): the request still gets in."""
    with served(max_connections=8, max_connections_per_client=2) as port, contextlib.ExitStack() as stack:
        slow = []
        for i in range(30):  # 8 + 4 connections in all: the old guard answered the 13th and every later one 503
            sock = stack.enter_context(connect(port, f"127.0.0.{2 + i}"))
            with contextlib.suppress(OSError):
                sock.sendall(SLOW_HEAD % 5000 + b"{")
            slow.append(sock)
        time.sleep(0.3)
        for sock in slow:  # the survivors trickle on
            with contextlib.suppress(OSError):
                sock.send(b" ")
        started = time.monotonic()
        assert request(port)[0] == 200 and time.monotonic() - started < 3
        assert [request(port)[0] for _ in range(3)] == [200] * 3
        answers = []
        for sock in slow:  # the slowest were closed to make room, with a 408 (or none if closed before their headers were read)
            sock.settimeout(0.2)
            with contextlib.suppress(OSError):
                answers.append(sock.recv(4096))
        assert any(a.startswith(b"HTTP/1.1 408") and b"not received fast enough" in a for a in answers)


def test_a_request_just_begun_outlasts_older_slow_ones_when_connections_run_short():
    """Connections full of bodies that stalled a second ago: newcomers close those, not the request that has just begun."""
    with served(max_connections=2, max_connections_per_client=1) as port, contextlib.ExitStack() as stack:
        for i in range(6):  # 2 + 4 connections in all, each 500 bytes into its body and stalled
            stack.enter_context(connect(port, f"127.0.0.{2 + i}")).sendall(SLOW_HEAD % 5000 + b"{" + b" " * 499)
        time.sleep(1.2)
        mine = stack.enter_context(connect(port, "127.0.0.20"))
        mine.sendall(SLOW_HEAD % len(BODY))  # headers only: fewer bytes per second than the stalled ones so far
        time.sleep(0.1)
        for i in range(4):  # newcomers, each taking a connection's place
            stack.enter_context(connect(port, f"127.0.0.{30 + i}")).sendall(SLOW_HEAD % 5000 + b"{")
        time.sleep(0.1)
        mine.sendall(BODY)
        assert mine.recv(4096).startswith(b"HTTP/1.1 200")


def test_bodies_that_stall_cannot_hold_the_memory_for_bodies():
    """Eight bodies stalled near the limit fill the budget for bodies (8x the limit): the oldest goes, not the new request."""
    with served(max_body_bytes=10_000) as port, contextlib.ExitStack() as stack:
        stalled = []
        for i in range(8):  # 79,920 bytes held: the old server answered the next body 503 (the budget is 80,000)
            sock = stack.enter_context(connect(port, f"127.0.0.{2 + i}"))
            sock.sendall(SLOW_HEAD % 10_000 + b"{" + b" " * 9989)
            stalled.append(sock)
            time.sleep(0.05)
        time.sleep(0.3)
        assert request(port)[0] == 200
        answer = stalled[0].recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"too many request bodies" in answer


def test_the_health_check_keeps_a_slot_when_every_request_slot_is_busy():
    with served_app(max_connections=2) as (port, app), contextlib.ExitStack() as stack:
        occupancy, gate, entered = app.state.occupancy, threading.Event(), threading.Semaphore(0)
        original = occupancy._warm

        def held(graph):
            entered.release()
            assert gate.wait(20)
            original(graph)

        occupancy._warm = held
        threads = [threading.Thread(target=request, args=(port,)) for _ in range(2)]
        for thread in threads:
            thread.start()
            stack.callback(thread.join, 20)
        stack.callback(gate.set)  # (first of these on the way out)
        assert entered.acquire(timeout=10) and entered.acquire(timeout=10)  # two placements in progress: every slot
        head = SLOW_HEAD % 5000 + b"{"
        stack.enter_context(connect(port, "127.0.0.3")).sendall(head)  # a slow body holds no slot
        assert request(port)[0] == 503
        assert request(port, "GET", "/v1/health", body=None)[0] == 200
        assert request(port, "HEAD", "/v1/health", body=None) == (200, b"")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None])
def test_a_cross_site_body_that_is_not_json_gets_415(content_type):
    with served() as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.putrequest("POST", "/v1/placements")
        if content_type is not None:
            conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(len(BODY)))
        conn.endheaders(BODY)
        response = conn.getresponse()
        assert response.status == 415 and b"application/json" in response.read()
        conn.close()
        assert request(port, headers={"Content-Type": "application/json; charset=utf-8"})[0] == 200


def _serve(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--memory-only", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_serve_refuses_unbounded_settings_and_a_wildcard_host_in_one_line():
    cases = [
        (["--max-connections", "1000000000000"], "--max-connections"),
        (["--cache-mb", "1e308"], "--cache-mb"),
        (["--max-body-mb", "1e308"], "--max-body-mb"),
        (["--allowed-host", "*"], "--allowed-host '*' would accept Host headers"),
        (["--allowed-host", "*.com"], "--allowed-host '*.com' would accept Host headers"),
        (["--token-file", "/dev/zero"], "is over"),
    ]
    for args, message in cases:
        result = _serve("--port", "0", *args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr[-500:])
        assert "Traceback" not in result.stderr


def test_serve_on_port_0_announces_the_port_it_listens_on():
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--memory-only", "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        text = ""
        for _ in range(5):  # the announcement comes first (the console may wrap it)
            text += proc.stderr.readline().replace("\n", " ")
            if match := re.search(r"on http://127\.0\.0\.1:(\d+)", text):
                break
        assert match and match.group(1) != "0", text
        port = int(match.group(1))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                assert request(port, "GET", "/v1/health", body=None)[0] == 200
                break
            time.sleep(0.1)
        else:
            pytest.fail("the announced port never answered")
    finally:
        proc.terminate()
        proc.wait(30)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_client_that_drops_mid_body_logs_no_traceback():
    records = _Records()
    with served() as port:
        logging.getLogger("uvicorn.error").addHandler(records)  # after the server's start: it configures its loggers afresh
        try:
            for _ in range(3):
                with connect(port) as sock:
                    sock.sendall(
                        b"POST /v1/placements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"
                    )
                    time.sleep(0.1)
            time.sleep(0.5)
            assert request(port)[0] == 200
        finally:
            logging.getLogger("uvicorn.error").removeHandler(records)
    assert [r.getMessage() for r in records.records if r.levelno >= logging.ERROR or r.exc_info] == []
