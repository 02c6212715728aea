"""The service's ASGI server: uvicorn's h11 protocol behind a connection guard.

uvicorn alone counts every open connection against its concurrency limit and never closes a
connection that has not sent a complete request, so a few dozen idle sockets deny the service to
everyone. Here:

- a connection that has not sent a request's complete headers within ``header_timeout_s`` (from
  its opening, or from the end of its last answer) is closed, however slowly it trickles bytes;
- a client address holds at most ``max_connections_per_client`` connections, and all clients
  together ``max_connections + HEALTH_SLOTS``; a new connection past either cap closes, to take
  its place, the connection waiting for or still receiving a request that has received the
  fewest bytes per second since that request could begin (one that sent nothing first, then the
  oldest; one receiving a body is answered 408), sparing connections opened or answered less than
  :data:`PROGRESS_FLOOR_S` ago while others remain; only when every connection is being
  answered does the new one get 503. So peers trickling headers or bodies, from any number of
  addresses, never keep a new connection out, and a request sent at network speed outpaces
  them;
- requests in progress are capped by the app (:class:`~placer.serve.middleware.RequestLimit`) at
  ``max_connections``, counted from the end of their bodies (a body being received holds only
  a connection and its bytes, both capped), the health check exempt: the extra ``HEALTH_SLOTS``
  connections keep it answering while every other slot is busy.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import Counter

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from placer.serve.settings import ServiceSettings

HEALTH_SLOTS = 4  # connections beyond max_connections, usable only by the health check in practice


def _answer(status: bytes, detail: bytes, extra: bytes = b"") -> bytes:
    """A whole HTTP/1.1 answer that closes the connection: ``{"detail": detail}`` (JSON) with ``extra`` header lines."""
    body = b'{"detail":"%s"}' % detail
    head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%sconnection: close\r\n\r\n"
    return head % (status, len(body), extra) + body


REFUSED = _answer(b"503 Service Unavailable", b"too many connections; retry shortly", b"retry-after: 1\r\n")
EVICTED = _answer(b"408 Request Timeout", b"request not received fast enough: closed to admit another connection")
PROGRESS_FLOOR_S = 1.0  # a request's rate is its bytes over at least this many seconds: a new one is not slow yet

log = logging.getLogger("placer.serve")


class ConnectionGuard:
    """The open connections of one server, oldest first, and how many each client address holds."""

    def __init__(self, max_open: int, per_client: int, header_timeout_s: float) -> None:
        self.max_open, self.per_client, self.header_timeout_s = max_open, per_client, header_timeout_s
        self.open: dict[GuardedH11Protocol, None] = {}  # insertion order: oldest first
        self.by_client: Counter[str | None] = Counter()
        self.evicted = self.evicted_slow = self.refused = self.timed_out = 0

    def admit(self, conn: GuardedH11Protocol) -> bool:
        """Count ``conn`` in; False (and ``conn`` not counted) when a cap is reached and no connection can make room.

        Room is made by closing one connection of ``conn``'s address when that address is at its
        cap (else of any): among those waiting for a request or still receiving one (never one
        being answered), the one that has received the fewest bytes per second since its
        request could begin (:meth:`GuardedH11Protocol.rate`; so those that sent nothing first,
        then the oldest), sparing those younger than :data:`PROGRESS_FLOOR_S` while older ones
        remain. A closed connection that was receiving a request is answered 408.
        """
        address = conn.address
        over_client = self.by_client[address] >= self.per_client
        if over_client or len(self.open) >= self.max_open:
            now = conn.loop.time()
            candidates = (c for c in self.open if (c.idle or c.receiving) and (not over_client or c.address == address))
            victim = min(candidates, key=lambda c: (now - c.since < PROGRESS_FLOOR_S, c.rate(now)), default=None)
            if victim is None:
                self.refused += 1
                return False
            if victim.idle:
                self.evicted += 1
                victim.close()
            else:
                self.evicted_slow += 1
                victim.close(EVICTED)
        self.open[conn] = None
        self.by_client[address] += 1
        return True

    def forget(self, conn: GuardedH11Protocol) -> None:
        """Count ``conn`` out (idempotent)."""
        if self.open.pop(conn, False) is None:
            self.by_client[conn.address] -= 1
            if self.by_client[conn.address] <= 0:
                del self.by_client[conn.address]


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under a :class:`ConnectionGuard` (``guard``: set by :func:`guarded_protocol`)."""

    guard: ConnectionGuard

    @property
    def address(self) -> str | None:
        return self.client[0] if self.client else None

    @property
    def idle(self) -> bool:
        """No request in progress: waiting for a request's headers (first or next)."""
        return self.cycle is None or self.cycle.response_complete

    @property
    def receiving(self) -> bool:
        """A request whose headers came but whose body has not all come, and that is not being answered yet."""
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.response_started and not cycle.response_complete

    def rate(self, now: float) -> float:
        """Bytes per second received since :attr:`since`, over at least :data:`PROGRESS_FLOOR_S`."""
        return self._received / max(now - self.since, PROGRESS_FLOOR_S)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self.since, self._received = self.loop.time(), 0  # when the current request could begin: opening, or the last answer
        if not self.guard.admit(self):
            transport.write(REFUSED)
            transport.close()
            return
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        super().data_received(data)

    def on_response_complete(self) -> None:
        self.since, self._received = self.loop.time(), 0  # before the base class starts a pipelined request
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def close(self, answer: bytes = b"") -> None:
        """Close the connection now, after writing ``answer`` (raw HTTP; nothing else is sent on it); it stops counting at once.

        A request still being received sees ``http.disconnect`` and is dropped.
        """
        self.guard.forget(self)
        if not self.transport.is_closing():
            if answer:
                self.transport.write(answer)
            self.transport.close()

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.guard.header_timeout_s, self._headers_overdue)

    def _headers_overdue(self) -> None:
        if self.idle and not self.transport.is_closing():
            self.guard.timed_out += 1
            self.close()


def guarded_protocol(settings: ServiceSettings) -> type[GuardedH11Protocol]:
    """A protocol class whose connections share one guard sized by ``settings``."""
    guard = ConnectionGuard(settings.max_connections + HEALTH_SLOTS, settings.max_connections_per_client, settings.header_timeout_s)
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})


def make_server(app, settings: ServiceSettings, host: str = "127.0.0.1", port: int = 0, **options) -> uvicorn.Server:
    """A uvicorn server for ``app`` under the guard (``options``: more :class:`uvicorn.Config` arguments)."""
    options = {"log_level": "info", "timeout_keep_alive": 5, **options}
    config = uvicorn.Config(app, host=host, port=port, http=guarded_protocol(settings), limit_concurrency=None, **options)
    return uvicorn.Server(config)


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) as uvicorn binds it (port 0: any free port; ``getsockname`` tells which)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
