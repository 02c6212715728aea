"""The connection guard's bookkeeping and eviction policy: which connection makes room for a new one.

A :class:`ConnectionGuard` counts one server's open connections (oldest first) and how many each
client address holds; the connections themselves (:class:`~placer.serve.server.GuardedH11Protocol`)
close, linger and time out. A client address holds at most ``max_connections_per_client``
connections (a trusted proxy's address, ``trusted_proxies``, is exempt: it carries many clients),
and all clients together ``max_connections`` + :data:`~placer.serve.server.HEALTH_SLOTS`. A new connection past its address's
cap closes a connection of that address whose writes are paused, else one that has received
nothing of a request (idle longest; answered 503 with ``Retry-After``, since its request may be on
the way), never one receiving a request or being answered. Past the global cap it closes any
connection whose writes are paused, else, as before, the connection waiting for or still receiving
a request that has received the fewest bytes per second since that request could begin (one that
sent nothing first, then the oldest; one receiving a request is answered 408). Both spare
connections opened or answered less than :data:`PROGRESS_FLOOR_S` ago while others remain; past
the global cap, before closing a spared one, a connection being answered with more requests
pipelined behind (a flood of cheap requests keeps it busy without pause) is closed once its answer
is sent, its pipelined requests unanswered (a client resends those). When no connection may be
closed the new one is answered 503 with ``Retry-After``. So peers trickling headers or bodies, or
not reading, from any number of addresses, never keep a new connection out, and a team behind one
address gets answers or 503s, never resets.

Past the global cap admission is also fair per address: each address's share is the cap over the addresses holding
connections (the new one's counted; trusted proxies aside). A new connection of an address at or over its share may
take the place of its own connections only; one of an address under it takes the place of a connection of the
addresses over theirs (the one holding most first), and, when all of those are being answered, tells one of the
address holding most to close once its answer is sent. So churn from a few addresses, however busy it keeps every
connection, never keeps a client on an address of its own out.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from typing import Protocol


def raw_answer(status: bytes, detail: bytes, extra: bytes = b"") -> bytes:
    """A whole HTTP/1.1 answer that closes the connection: ``{"detail": detail}`` (JSON) with ``extra`` header lines."""
    body = b'{"detail":"%s"}' % detail
    head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%sconnection: close\r\n\r\n"
    return head % (status, len(body), extra) + body


REFUSED = raw_answer(b"503 Service Unavailable", b"too many connections; retry shortly", b"retry-after: 1\r\n")
REFUSED_CLIENT = raw_answer(
    b"503 Service Unavailable", b"too many connections from this address, all busy; retry shortly", b"retry-after: 1\r\n"
)
EVICTED = raw_answer(b"408 Request Timeout", b"request not received fast enough: closed to admit another connection")
PROGRESS_FLOOR_S = 1.0  # a request's rate is its bytes over at least this many seconds: a new one is not slow yet


class Connection(Protocol):
    """What the guard reads of a connection and asks of it (:class:`~placer.serve.server.GuardedH11Protocol` is one)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...
    @property
    def address(self) -> str | None: ...
    @property
    def since(self) -> float: ...
    @property
    def paused_since(self) -> float | None: ...
    @property
    def served(self) -> int: ...
    @property
    def idle(self) -> bool: ...
    @property
    def receiving(self) -> bool: ...
    @property
    def stalled(self) -> bool: ...
    @property
    def pipelining(self) -> bool: ...
    @property
    def received(self) -> int: ...
    def rate(self, now: float) -> float: ...
    def unread_in_kernel(self, default: bool) -> bool: ...
    def linger(self, answer: bytes = b"") -> None: ...
    def leave(self) -> None: ...
    def abort(self) -> None: ...


class ConnectionGuard:
    """The open connections of one server, oldest first, and how many each client address holds.

    ``trusted_proxies``: addresses or networks whose connections carry many clients (not held to
    ``per_client``). The counters say what the guard did: ``evicted`` (idle connections closed to
    admit another), ``evicted_slow`` (receiving ones, answered 408), ``evicted_stalled`` (ones
    whose writes were paused, aborted), ``refused`` (new connections answered 503),
    ``timed_out`` (no complete headers within the header timeout), ``send_timed_out`` (writes
    paused, or a close not flushed, for the send timeout: aborted).
    """

    def __init__(self, max_open: int, per_client: int, header_timeout_s: float, send_timeout_s: float = 10.0, trusted_proxies=()) -> None:
        self.max_open, self.per_client, self.header_timeout_s = max_open, per_client, header_timeout_s
        self.send_timeout_s = send_timeout_s
        self.proxies = tuple(ipaddress.ip_network(p, strict=False) for p in trusted_proxies)
        self.open: dict[Connection, None] = {}  # insertion order: oldest first
        self.by_client: Counter[str | None] = Counter()
        self.lingering: dict[Connection, None] = {}  # closed, reading what their clients still send; oldest first
        self.evicted = self.evicted_slow = self.evicted_stalled = self.evicted_pipelining = self.evicted_busy = 0
        self.refused = self.timed_out = self.send_timed_out = 0

    def is_proxy(self, address: str | None) -> bool:
        """Whether ``address`` is a trusted proxy's (its connections carry many clients)."""
        if not self.proxies or address is None:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.proxies)

    def admit(self, conn: Connection) -> bool:
        """Count ``conn`` in; False (and ``conn`` not counted) when a cap is reached and no connection can make room.

        Past its address's cap, room is made by closing a connection of that address whose writes
        are paused (the longest paused), else one that has received nothing of a request (the one
        idle longest, sparing those opened or answered less than :data:`PROGRESS_FLOOR_S` ago
        while older ones remain); never one receiving a request or being answered. Past the
        global cap, by closing any connection whose writes are paused, else, among those waiting
        for or still receiving a request (never one being answered), the one that has received
        the fewest bytes per second since its request could begin
        (:meth:`~placer.serve.server.GuardedH11Protocol.rate`; so those that sent nothing first,
        then the oldest), with the same sparing; when only connections spared that way remain, a
        connection being answered with more requests pipelined behind is told to close once that
        answer is sent (:meth:`~placer.serve.server.GuardedH11Protocol.leave`; the one that has
        answered most) in their stead. A closed connection that had received nothing of a
        request is answered 503 with ``Retry-After`` (its request may be on the way), one
        receiving a request 408; one whose writes are paused is aborted.
        """
        address = conn.address
        over_client = self.over_client(address)
        if over_client or len(self.open) >= self.max_open:
            victim = self._victim(conn, over_client)
            if victim is None:
                self.refused += 1
                return False
            if victim.stalled:
                self.evicted_stalled += 1
                victim.abort()
            elif victim.pipelining:
                self.evicted_pipelining += 1
                victim.leave()
            elif not (victim.idle or victim.receiving):  # being answered: of the address holding most (fairness)
                self.evicted_busy += 1
                victim.leave()
            elif victim.idle and not victim.received:  # its request may be on the way: it reads why it was not answered
                self.evicted += 1
                victim.linger(REFUSED_CLIENT if over_client else REFUSED)
            else:
                self.evicted_slow += 1
                victim.linger(EVICTED)
        self.open[conn] = None
        self.by_client[address] += 1
        return True

    def over_client(self, address: str | None) -> bool:
        """Whether ``address`` holds as many connections as it may (a trusted proxy's never does)."""
        return self.by_client[address] >= self.per_client and not self.is_proxy(address)

    def _victim(self, conn: Connection, over_client: bool) -> Connection | None:
        now = conn.loop.time()
        pool = [c for c in self.open if c.address == conn.address] if over_client else list(self.open)
        if over_client:
            stalled = [c for c in pool if c.stalled]
            if stalled:
                return min(stalled, key=lambda c: c.paused_since or now)
            # never a connection receiving a request: only one that has received nothing of its next one
            unstarted = (c for c in pool if c.idle and not c.received and not c.unread_in_kernel(default=False))
            return min(unstarted, key=lambda c: (now - c.since < PROGRESS_FLOOR_S, c.since), default=None)
        if self.is_proxy(conn.address):
            return self._closable(pool, now)
        counts = {a: n for a, n in self.by_client.items() if not self.is_proxy(a)}
        share = max(1, self.max_open // len(counts.keys() | {conn.address}))  # each address's fair share of the connections
        if counts.get(conn.address, 0) >= share:  # at or over its share: it may take the place of its own only
            return self._closable([c for c in pool if c.address == conn.address], now)
        over = sorted((a for a, n in counts.items() if n > share), key=lambda a: -counts[a])
        if not over:
            return self._closable(pool, now)
        heaviest = [c for c in pool if c.address == over[0]]
        found = self._closable(heaviest, now) or self._closable([c for c in pool if c.address in over], now)
        busy = (c for c in heaviest if not (c.idle or c.receiving))  # being answered: closed once that answer is sent
        return found or max(busy, key=lambda c: (c.served, now - c.since), default=None)

    def _closable(self, pool: list[Connection], now: float) -> Connection | None:
        """Past the global cap, the connection of ``pool`` to close (:meth:`admit`), or None."""
        stalled = [c for c in pool if c.stalled]
        if stalled:
            return min(stalled, key=lambda c: c.paused_since or now)
        candidates = (c for c in pool if c.idle or c.receiving)
        waiting = min(candidates, key=lambda c: (now - c.since < PROGRESS_FLOOR_S, c.rate(now)), default=None)
        if waiting is not None and now - waiting.since >= PROGRESS_FLOOR_S:
            return waiting
        return max((c for c in pool if c.pipelining), key=lambda c: c.served, default=waiting)

    def forget(self, conn: Connection) -> None:
        """Count ``conn`` out (idempotent)."""
        if self.open.pop(conn, False) is None:
            self.by_client[conn.address] -= 1
            if self.by_client[conn.address] <= 0:
                del self.by_client[conn.address]
