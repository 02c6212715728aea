"""Per-address fairness in connection admission (issue 82, item 4): churn from a few addresses that keeps every
connection busy never keeps a well-behaved client on its own address out."""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading
import time
from dataclasses import dataclass, field

from placer.baselines.registry import make_heuristic
from placer.serve.guard import ConnectionGuard
from placer.serve.http import create_app
from placer.serve.server import make_server
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import running
from tests.placer.toys import toy_cluster

ATTACKERS = [f"127.0.0.{i}" for i in range(2, 10)]  # Linux routes all of 127/8 to lo
LOOP = asyncio.new_event_loop()


@dataclass(eq=False)
class _Busy:
    """A connection being answered (its request in progress, nothing pipelined): the guard's view of it."""

    address: str
    loop: asyncio.AbstractEventLoop = LOOP
    since: float = field(default_factory=LOOP.time)
    paused_since: float | None = None
    served: int = 0
    idle: bool = False
    receiving: bool = False
    stalled: bool = False
    pipelining: bool = False
    received: int = 100
    left: bool = False
    guard: ConnectionGuard | None = None

    def rate(self, now: float) -> float:
        return 1e6

    def unread_in_kernel(self, default: bool) -> bool:
        return False

    def linger(self, answer: bytes = b"") -> None:
        raise AssertionError("a connection being answered is never lingered")

    def leave(self) -> None:  # as GuardedH11Protocol.leave: it stops counting at once
        self.left = True
        assert self.guard is not None
        self.guard.forget(self)

    def abort(self) -> None:
        raise AssertionError("a connection being answered is not aborted")


def test_past_the_global_cap_a_busy_connection_of_the_heaviest_address_makes_room():
    guard = ConnectionGuard(max_open=16, per_client=16, header_timeout_s=5.0)
    busy = [_Busy(ATTACKERS[i % 4], guard=guard) for i in range(16)]  # 4 each: over a fair share of 16 / 5
    assert all(guard.admit(c) for c in busy)
    good = _Busy("127.0.0.1")
    assert guard.admit(good)  # before: 503, every connection being answered
    left = [c for c in busy if c.left]
    assert len(left) == 1 and guard.evicted_busy == 1 and len(guard.open) == 16
    again = _Busy("127.0.0.1")
    assert guard.admit(again) and sum(c.left for c in busy) == 2  # the address holding most gives one up each time
    assert guard.by_client["127.0.0.1"] == 2


def test_an_address_at_its_fair_share_is_refused_rather_than_taking_from_another():
    guard = ConnectionGuard(max_open=6, per_client=16, header_timeout_s=5.0)
    conns = [_Busy(a, guard=guard) for a in ["127.0.0.2"] * 3 + ["127.0.0.3"] * 3]
    assert all(guard.admit(c) for c in conns)
    assert not guard.admit(_Busy("127.0.0.3")) and guard.refused == 1  # at its share (6 / 2): no one gives way to it
    assert guard.admit(_Busy("127.0.0.4", guard=guard))  # under its share (6 / 3): the one holding most gives one up
    assert len([c for c in conns if c.left]) == 1 and guard.by_client["127.0.0.4"] == 1


def _churn(port: int, source: str, stop: threading.Event) -> None:
    """Reconnect and send a request again and again from ``source`` (each answer read, the connection then closed)."""
    request = b"GET /v1/cluster HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2, source_address=(source, 0)) as sock:
                sock.sendall(request)
                while sock.recv(65536):
                    pass
        except OSError:
            time.sleep(0.001)


def test_a_well_behaved_client_is_answered_through_connection_churn_from_eight_addresses():
    settings = ServiceSettings(max_connections=8, header_timeout_s=2.0)
    app = create_app(toy_cluster(1, 4), make_heuristic("fixed:1"), settings)
    stop = threading.Event()
    with running(make_server(app, settings, log_level="error")) as port:
        threads = [threading.Thread(target=_churn, args=(port, a, stop), daemon=True) for a in ATTACKERS for _ in range(6)]
        for t in threads:
            t.start()
        statuses = []
        try:
            time.sleep(0.3)
            deadline = time.monotonic() + 30.0  # a bound against a hang, not a speed bar: answers are counted, not timed
            while len(statuses) < 30 and time.monotonic() < deadline:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                try:
                    conn.request("GET", "/v1/health")
                    response = conn.getresponse()
                    statuses.append((response.status, response.read()[:80]))
                except OSError as exc:
                    statuses.append((0, repr(exc).encode()))
                finally:
                    conn.close()
        finally:
            stop.set()
            for t in threads:
                t.join(5)
    assert len(statuses) == 30 and all(status == 200 for status, _ in statuses), statuses
