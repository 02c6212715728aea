"""The service's ASGI server: uvicorn's h11 protocol behind a connection guard.

uvicorn alone counts every open connection against its concurrency limit, never closes a
connection that has not sent a complete request, and waits forever to write to a client that
does not read, so a few dozen idle sockets or non-reading pipeliners deny the service to
everyone. Here:

- a connection that has not sent a request's complete headers within ``header_timeout_s`` (from
  its opening, or from the end of its last answer) is closed, however slowly it trickles bytes;
- a connection whose writes stay paused (more than the transport's 64 KiB high-water mark
  queued: the client is not reading) for ``send_timeout_s`` is aborted (reset: a close would
  wait for the buffer to drain, which it never does), so its request sees a disconnect and its
  answer is dropped. Its kernel send buffer is fixed at :data:`SEND_BUFFER_BYTES` (Linux holds
  twice that; autotuning would let 4 MB of answers pile up first), uvicorn answers a
  connection's pipelined requests one at a time and stops reading while it answers one, and an
  answer is not begun while writes are paused: a connection queues at most 128 KiB in the kernel
  plus 64 KiB and one answer in the process;
- a client address holds at most ``max_connections_per_client`` connections (a trusted proxy's
  address, ``trusted_proxies``, is exempt: it carries many clients), and all clients together
  ``max_connections + HEALTH_SLOTS``. A new connection past a cap takes the place of a
  connection whose writes are paused, else of one waiting for a request or (past the global cap)
  receiving one slowly, sparing those opened or answered less than a second ago, else (past the
  global cap) of one answering pipelined requests, once its answer is sent; when none may be
  closed it is answered 503 with ``Retry-After``. :mod:`placer.serve.guard` counts the
  connections and picks which makes room. So peers trickling headers or bodies, or not reading,
  from any number of addresses, never keep a new connection out, and a team behind one address
  gets answers or 503s, never resets;
- a connection is closed with a lingering close (:meth:`GuardedH11Protocol.linger`): the answer
  (if any) is written, writing is shut down, and what the client still sends is read and
  discarded for up to :data:`LINGER_S` or until it closes, so the kernel never resets a
  connection whose request was unread and the client reads its 503 or 408 instead of a reset.
  At most :data:`MAX_LINGERING` connections linger at once (past it the oldest is aborted);
- requests in progress are capped by the app (:class:`~placer.serve.middleware.RequestLimit`) at
  ``max_connections``, counted from the end of their bodies to the start of their answers (a
  body being received holds only a connection and its bytes, both capped; an answer being
  delivered holds only a connection), the health check exempt: the extra ``HEALTH_SLOTS``
  connections keep it answering while every other slot is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from typing import Any, cast

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from placer.serve.guard import PROGRESS_FLOOR_S, REFUSED, REFUSED_CLIENT, ConnectionGuard, raw_answer
from placer.serve.logtext import escape_logs
from placer.serve.settings import ServiceSettings

HEALTH_SLOTS = 4  # connections beyond max_connections, usable only by the health check in practice


LINGER_S = 5.0  # a closed connection reads and discards what its client still sends for at most this long
MAX_LINGERING = 256  # connections lingering at once (past it the oldest is aborted)
SEND_BUFFER_BYTES = 64 * 1024  # each connection's kernel send buffer (SO_SNDBUF; Linux holds twice this)

log = logging.getLogger("placer.serve")

AMBIGUOUS_FRAMING = raw_answer(
    b"400 Bad Request", b"a request may not carry both Content-Length and Transfer-Encoding (RFC 9112, 6.1): refused, connection closed"
)
CHUNK_TOO_LARGE = raw_answer(b"413 Content Too Large", b"a chunk larger than this server accepts for a whole body: refused")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under a :class:`~placer.serve.guard.ConnectionGuard` (``guard``: set by :func:`guarded_protocol`)."""

    guard: ConnectionGuard
    max_body_bytes: int = 8 * 1024 * 1024  # a chunk declared larger is refused at once (set by guarded_protocol)

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

    @property
    def stalled(self) -> bool:
        """Writes paused: more than the transport's high-water mark is queued (the client is not reading)."""
        return self.paused_since is not None

    @property
    def pipelining(self) -> bool:
        """Being answered, with more requests already received behind the one being answered (and not leaving)."""
        return not self.idle and not self.receiving and not self._leaving and bool(self.conn.trailing_data[0])

    @property
    def received(self) -> int:
        """Bytes received since :attr:`since` (of the request in progress or the next)."""
        return self._received

    def rate(self, now: float) -> float:
        """Bytes per second received since :attr:`since`, over at least :data:`PROGRESS_FLOOR_S`."""
        return self._received / max(now - self.since, PROGRESS_FLOOR_S)

    @property
    def lingering(self) -> bool:
        """Closed: writing shut down, reading only to discard (see :meth:`linger`)."""
        return self._linger_timer is not None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._linger_timer: asyncio.TimerHandle | None = None
        self._socket_transport = transport
        super().connection_made(cast(asyncio.Transport, _GentleClose(transport, self)))  # uvicorn closes through it
        sock = transport.get_extra_info("socket")
        if sock is not None:  # a fixed kernel buffer: what a client does not read stops its answers soon (autotuning: 4 MB)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        self._header_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        self.paused_since: float | None = None  # when writes paused (None: not paused)
        self.since, self._received = self.loop.time(), 0  # when the current request could begin: opening, or the last answer
        self.served = 0  # answers completed on this connection
        self._leaving = False  # to close once the answer in progress is sent (see leave)
        self._checked: object = None  # the request cycle whose headers' framing was checked
        if not self.guard.admit(self):
            self.linger(REFUSED_CLIENT if self.guard.over_client(self.address) else REFUSED)
            return
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        self.guard.lingering.pop(self, None)
        for timer in (self._header_timer, self._stall_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            return  # closed: what the client still sends is read only to be discarded
        self._received += len(data)
        super().data_received(data)
        refusal = self._framing_refusal()
        if refusal is not None:
            self.linger(refusal)

    def _framing_refusal(self) -> bytes | None:
        """The answer to a request whose framing is refused, once h11 has read its headers, else None: both
        ``Content-Length`` and ``Transfer-Encoding`` (which one a proxy in front believed is unknowable: request
        smuggling; RFC 9112 lets a server refuse it, then close), or a chunk declared larger than a whole body may be (its
        bytes would only be waited for until the body timeout)."""
        cycle = self.cycle
        if cycle is None or cycle.response_started or self.lingering:
            return None
        if self._checked is not cycle:
            self._checked = cycle
            names = [name for name, _ in cycle.scope["headers"]]
            if b"content-length" in names and b"transfer-encoding" in names:
                return AMBIGUOUS_FRAMING
        if getattr(getattr(self.conn, "_reader", None), "_bytes_in_chunk", 0) > self.max_body_bytes:  # h11's chunk reader
            return CHUNK_TOO_LARGE
        return None

    def on_response_complete(self) -> None:
        self.since, self._received = self.loop.time(), 0  # before the base class starts a pipelined request
        self.served += 1
        if self._leaving:
            self.server_state.total_requests += 1
            self.linger()
            return
        super().on_response_complete()
        if self.transport.is_closing():
            self._stall(closing=True)
        else:
            self._arm_header_timer()

    def pause_writing(self) -> None:
        super().pause_writing()
        self.paused_since = self.loop.time()
        self._stall()

    def resume_writing(self) -> None:
        """Progress: the queue drained below the low-water mark; a close still flushing gets a new send timeout."""
        super().resume_writing()
        self.paused_since = None
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        if self.transport.is_closing():
            self._stall(closing=True)

    def shutdown(self) -> None:
        """The server stops: a lingering connection closes now."""
        if self.lingering:
            self._end_linger()
        else:
            super().shutdown()

    def timeout_keep_alive_handler(self) -> None:
        super().timeout_keep_alive_handler()
        self._stall(closing=True)

    def send_400_response(self, msg: str) -> None:
        super().send_400_response(msg)
        self._stall(closing=True)

    def close_gently(self) -> None:
        """uvicorn's close: a lingering close when the client has sent what was not read (:meth:`linger`), else a close.

        (A plain close with unread bytes makes the kernel reset the connection, and the client may
        never read the answer just written: a 413 for a body too large, a 503 past the budget for
        bodies, a 400.) While lingering, the linger's end closes.
        """
        if self.lingering or self._socket_transport.is_closing():
            return
        if self._unread():
            self.linger()
        else:
            self._socket_transport.close()

    def _unread(self) -> bool:
        """Whether the client has sent, or is still sending, bytes not read: a body not all received, pipelined
        requests, or bytes waiting in the kernel."""
        return self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0]) or self.unread_in_kernel(default=True)

    def unread_in_kernel(self, default: bool) -> bool:
        """Whether bytes from the client wait in the kernel, not read yet (``default`` where that cannot be told)."""
        sock = self._socket_transport.get_extra_info("socket")
        try:
            import fcntl
            import termios

            return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0] > 0
        except (ImportError, AttributeError, OSError):
            return default

    def linger(self, answer: bytes = b"") -> None:
        """Close the connection after writing ``answer`` (raw HTTP; nothing else is sent on it); it stops counting at once.

        Writing is shut down after the answer and the connection then reads and discards what its
        client still sends, until the client closes or for at most :data:`LINGER_S`, so no request
        is left unread when it closes (which would reset the connection, and the client would not
        read the answer). A request still being received or answered sees ``http.disconnect``.
        """
        self.guard.forget(self)
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._unset_keepalive_if_required()
        if self.lingering:
            return
        if self._socket_transport.is_closing():
            self._stall(closing=True)
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        lingering = self.guard.lingering
        while len(lingering) >= MAX_LINGERING:
            next(iter(lingering)).abort()
        lingering[self] = None
        self._linger_timer = self.loop.call_later(LINGER_S, self._end_linger)
        if answer:
            self.transport.write(answer)
        try:
            self.transport.write_eof()
        except OSError:  # the client has gone already (reset)
            self.abort()
            return
        self.flow.resume_reading()
        if not self.transport.is_reading():
            self.transport.resume_reading()

    def leave(self) -> None:
        """Close the connection once the answer in progress is sent (a lingering close); it stops counting at once.

        The requests pipelined behind that answer are not answered: HTTP/1.1 lets a server close a
        connection after any answer, and a client resends the requests it got no answer to.
        """
        self.guard.forget(self)
        self._leaving = True  # (not uvicorn's keep_alive = False: its close would reset, the pipelined requests unread)

    def abort(self) -> None:
        """Reset the connection now, dropping what is queued to be sent, here and in the kernel (a close would wait
        for the client to read it)."""
        self.guard.forget(self)
        self.guard.lingering.pop(self, None)
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _end_linger(self) -> None:
        if self.transport.get_write_buffer_size():
            self.abort()
        else:
            self.guard.lingering.pop(self, None)
            self._socket_transport.close()

    def _stall(self, closing: bool = False) -> None:
        """Writes are paused (or, ``closing``, a close waits to send what is queued): abort after the send timeout."""
        if closing and not self.transport.get_write_buffer_size():
            return
        if self._stall_timer is None:
            self._stall_timer = self.loop.call_later(self.guard.send_timeout_s, self._send_overdue)

    def _send_overdue(self) -> None:
        self._stall_timer = None
        self.guard.send_timed_out += 1
        log.info("reset a connection from %s: its client read nothing for %g s", self.address, self.guard.send_timeout_s)
        self.abort()

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.guard.header_timeout_s, self._headers_overdue)

    def _headers_overdue(self) -> None:
        if self.idle and not self.transport.is_closing():
            self.guard.timed_out += 1
            self.linger()


class _GentleClose:
    """A connection's transport as uvicorn sees it: the transport, but ``close`` is :meth:`GuardedH11Protocol.close_gently`."""

    def __init__(self, transport: asyncio.Transport, protocol: GuardedH11Protocol) -> None:
        self._transport, self._protocol = transport, protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._protocol.close_gently()

    def is_closing(self) -> bool:
        return self._transport.is_closing() or self._protocol.lingering


def guarded_protocol(settings: ServiceSettings) -> type[GuardedH11Protocol]:
    """A protocol class whose connections share one guard sized by ``settings``."""
    guard = ConnectionGuard(
        settings.max_connections + HEALTH_SLOTS,
        settings.max_connections_per_client,
        settings.header_timeout_s,
        settings.send_timeout_s,
        settings.trusted_proxies,
    )
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard, "max_body_bytes": settings.max_body_bytes})


class GuardedServer(uvicorn.Server):
    """A uvicorn server whose connections are under ``guard``."""

    def __init__(self, config: uvicorn.Config, guard: ConnectionGuard) -> None:
        super().__init__(config)
        self.guard = guard


def make_server(app, settings: ServiceSettings, host: str = "127.0.0.1", port: int = 0, **options) -> GuardedServer:
    """A uvicorn server for ``app`` under the guard (``options``: more :class:`uvicorn.Config` arguments).

    ``X-Forwarded-For`` (and ``X-Forwarded-Proto``) are read only from ``settings.trusted_proxies``
    (uvicorn's default trusts them from loopback, so any local peer could name itself any client);
    with none, they are ignored.
    """
    protocol = guarded_protocol(settings)
    escape_logs("uvicorn.access", "uvicorn.error")  # a request's path is user text (percent-decoded: %0a is a newline)
    proxies = list(settings.trusted_proxies)
    options = {"log_level": "info", "timeout_keep_alive": 5, **options, "proxy_headers": bool(proxies), "forwarded_allow_ips": proxies}
    config = uvicorn.Config(app, host=host, port=port, http=protocol, limit_concurrency=None, **options)
    return GuardedServer(config, protocol.guard)


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
