"""HTTP edge cases, as raw bytes over a socket to a real loopback server (issue 82, item 6): ambiguous framing, two
Authorization headers, absurd chunk sizes, and user text in the logs."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import time

import pytest

from placer.baselines.registry import make_heuristic
from placer.serve.clock import Clock
from placer.serve.http import create_app
from placer.serve.logtext import printable
from placer.serve.server import make_server
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import running
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(1, 4)
TOKEN = secrets.token_urlsafe(32)
BODY = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()


@contextlib.contextmanager
def _served(clock: Clock | None = None, **settings):
    settings = ServiceSettings(**{"header_timeout_s": 5.0, "body_timeout_s": 30.0, **settings})
    app = create_app(CLUSTER, make_heuristic("fixed:1"), settings, clock)
    with running(make_server(app, settings, log_level="info")) as port:
        yield port


def _exchange(port: int, raw: bytes, wait_s: float = 5.0) -> tuple[bytes, bool, float]:
    """(what the server sent, whether it closed the connection, seconds until it did or ``wait_s``) for ``raw``."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        sock.sendall(raw)
        received, closed = b"", False
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(65536):
                received += chunk
            closed = True
    return received, closed, time.monotonic() - started


def _head(path: str = "/v1/placements", *lines: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + "".join(f"{x}\r\n" for x in lines) + "\r\n"
    ).encode()


def test_content_length_with_transfer_encoding_is_400_and_the_connection_closed():
    with _served() as port:
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
        raw = _head("/v1/placements", f"Content-Length: {len(BODY)}", "Transfer-Encoding: chunked") + chunked
        received, closed, _ = _exchange(port, raw + _head("/v1/health").replace(b"POST", b"GET"))
        assert received.startswith(b"HTTP/1.1 400 ") and b"Content-Length and Transfer-Encoding" in received, received[:300]
        assert closed and received.count(b"HTTP/1.1") == 1  # nothing after it is read as a request


def test_two_authorization_headers_are_refused():
    with _served(token=TOKEN) as port:
        good = f"Authorization: Bearer {TOKEN}"
        received, _, _ = _exchange(port, _head("/v1/jobs/x/lease", good, good, "Content-Length: 0"))
        assert received.startswith(b"HTTP/1.1 400 ") and b"more than one Authorization header" in received, received[:300]
        received, _, _ = _exchange(port, _head("/v1/jobs/x/lease", good, "Authorization: Bearer wrong", "Content-Length: 0"))
        assert received.startswith(b"HTTP/1.1 400 ")
        received, _, _ = _exchange(port, _head("/v1/jobs/x/lease", good, "Content-Length: 0"))
        assert received.startswith(b"HTTP/1.1 404 ")  # one header: as before


@pytest.mark.parametrize("size", [b"ffffffff", b"ffffffffffffffff", b"7fffffffffffffffffff"])
def test_an_absurd_chunk_size_is_refused_at_once(size):
    with _served() as port:
        raw = _head("/v1/placements", "Transfer-Encoding: chunked") + size + b"\r\n" + b"{" * 100
        received, closed, seconds = _exchange(port, raw, wait_s=10.0)
        assert received.startswith(b"HTTP/1.1 413 ") and closed and seconds < 3, (received[:200], seconds)


def test_user_text_in_the_logs_is_escaped(caplog):
    now = [1000.0]
    evil = "g\nFAKE LINE\x00\u202eevil"
    access = _Records()
    try:
        with _served(Clock(monotonic=lambda: now[0], wall=lambda: now[0])) as port, caplog.at_level("WARNING", "placer.serve"):
            logging.getLogger("uvicorn.access").addHandler(access)  # (after uvicorn configured its logging)
            body = json.dumps({"graph": chain().to_dict() | {"name": evil}, "beta": 1.0, "lease_s": 5.0}).encode()
            received, _, _ = _exchange(port, _head("/v1/placements", f"Content-Length: {len(body)}", "Connection: close") + body)
            assert received.startswith(b"HTTP/1.1 200 "), received[:300]
            now[0] += 10.0
            _exchange(port, b"GET /v1/cluster HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")  # sweeps the lease
            _exchange(port, b"GET /v1/cluster%0aFAKE%00LINE%E2%80%AE HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    finally:
        logging.getLogger("uvicorn.access").removeHandler(access)
    expired = [r.getMessage() for r in caplog.records if "ran out unrenewed" in r.getMessage()]
    assert len(expired) == 1 and printable(evil) in expired[0] and "\n" not in expired[0] and "\u202e" not in expired[0]
    lines = [m for m in access.messages if "FAKE" in m]
    assert lines and all(m.isprintable() for m in lines), lines  # the path shown quoted or escaped, never raw


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
