"""ASGI middleware of the placement service: bounded bodies, JSON-only and same-site writes, bounded requests in flight, bearer
tokens."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placer.serve.tenants import Tenants


class BodyLimit:
    """413 for a body over ``limit`` bytes (declared or streamed), 408 for one not received within
    ``timeout_s`` of the request; the bodies being received hold at most ``budget`` bytes together.

    The body is read whole before the app sees it, so an oversized stream is refused however it
    is sent, the app never parses a partial body, and clients that stop mid-body cannot hold
    memory for longer than ``timeout_s`` or beyond ``budget`` together. When a body's bytes would
    take the total past ``budget``, the bodies that began before it are dropped, oldest first,
    until it fits (503 with ``Retry-After`` for each): bodies that stalled cannot keep newer ones
    out, and a body is refused only when the older ones cannot make room (never when ``budget``
    is at least ``limit``, the default being 8 times it). A request to any path but ``large_paths`` may send at most
    ``small_limit`` bytes (when given): its JSON is parsed whole, one value and one error per key, before any field is checked;
    one to a path that matches (whole) a regular expression of ``path_limits`` (pattern, bytes) may send that pattern's bytes
    (at most ``limit``).
    """

    def __init__(
        self,
        app: ASGIApp,
        limit: int,
        timeout_s: float = 30.0,
        budget: int | None = None,
        small_limit: int | None = None,
        large_paths: tuple[str, ...] = (),
        path_limits: Sequence[tuple[str, int]] = (),
    ) -> None:
        self.app, self.large_limit, self.timeout_s = app, limit, timeout_s
        self.small_limit, self.large_paths = (limit if small_limit is None else min(small_limit, limit)), large_paths
        self.path_limits = tuple((re.compile(pattern), min(size, limit)) for pattern, size in path_limits)
        self.budget = budget if budget is not None else 8 * limit
        self.buffered = 0  # bytes held by bodies being received (one event loop: no lock needed)
        self.reading: dict[asyncio.Future[None], int] = {}  # each body being received, oldest first: its bytes; set to drop it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self._limit(scope.get("path", ""))
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _reject(send, 413, f"request body over {limit} bytes")
        chunks, seen = [], 0
        deadline = time.monotonic() + self.timeout_s
        dropped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.reading[dropped] = 0
        try:
            while True:
                message = await _next(receive, dropped, deadline - time.monotonic())
                if dropped.done():
                    return await _reject(send, 503, "too many request bodies in flight; retry shortly", {"Retry-After": "1"})
                if message is None:
                    return await _reject(send, 408, f"request body not received within {self.timeout_s:g} s")
                if message["type"] == "http.disconnect":
                    return None  # the client left mid-body: no one to answer, nothing to log
                if message["type"] != "http.request":
                    return await self.app(scope, _replay([message], receive), send)
                chunk = message.get("body", b"")
                seen += len(chunk)
                self.buffered += len(chunk)
                self.reading[dropped] = seen
                if seen > limit:
                    return await _reject(send, 413, f"request body over {limit} bytes")
                if self.buffered > self.budget and not self._make_room(dropped):
                    return await _reject(send, 503, "too many request bodies in flight; retry shortly", {"Retry-After": "1"})
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        finally:
            if self.reading.pop(dropped, None) is not None:  # (a dropped body's bytes were counted out when it was dropped)
                self.buffered -= seen
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        del chunks
        await self.app(scope, _replay([body], receive), send)

    def _limit(self, path: str) -> int:
        """The most bytes a body sent to ``path`` may have."""
        if path in self.large_paths:
            return self.large_limit
        return next((size for pattern, size in self.path_limits if pattern.fullmatch(path)), self.small_limit)

    def _make_room(self, mine: asyncio.Future[None]) -> bool:
        """Drop the bodies that began before ``mine``, oldest first, until the total is within budget; False if it is not."""
        for older in list(self.reading):
            if older is mine or self.buffered <= self.budget:
                break
            self.buffered -= self.reading.pop(older)
            older.set_result(None)
        return self.buffered <= self.budget


async def _next(receive: Receive, dropped: asyncio.Future[None], timeout: float) -> Message | None:
    """The next message, or None if ``timeout`` seconds pass or ``dropped`` is set first."""
    if dropped.done() or timeout <= 0:
        return None
    task = asyncio.ensure_future(receive())
    done, _ = await asyncio.wait((task, dropped), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if task in done and not dropped.done():
        return task.result()
    task.cancel()
    return None


class JsonOnly:
    """415 for a POST, PUT or PATCH that does not say ``Content-Type: application/json``, bodiless or not.

    A web page on another site can send a ``text/plain``, form, multipart or untyped request (a
    bodiless ``POST /v1/jobs/{id}/lease`` renews a lease) without asking first; a JSON one needs a
    CORS preflight, which this service never grants. So refusing every other request that changes
    state keeps pages from reserving, renewing or reporting through a browser (placer's clients
    send the header on every request).
    A method no route of ``routes`` takes at that path changes nothing: it passes, for the router's 405 (or 404).
    """

    METHODS = ("POST", "PUT", "PATCH")

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute] = ()) -> None:
        self.app, self.routes = app, tuple(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in self.METHODS
            and not _is_json(dict(scope.get("headers", [])).get(b"content-type"))
            and (not self.routes or any(route.matches(scope)[0] is Match.FULL for route in self.routes))
        ):
            return await _reject(send, 415, "requests that change state must be JSON (Content-Type: application/json), bodiless ones too")
        await self.app(scope, receive, send)


class SameSiteWrites:
    """403 for a request that changes state (POST, PUT, PATCH, DELETE) which its browser says comes from another site.

    Browsers name where a request comes from: ``Sec-Fetch-Site`` (``cross-site`` or ``same-site``,
    another origin of the same site, are refused; ``same-origin`` and ``none``, typed by the user,
    pass) and ``Origin`` (``null``, or an origin that is neither the request's ``Host`` nor one of
    ``allowed_hosts``, is refused). A request without either (curl, placer's clients) passes: it
    does not come from a browser page. With :class:`JsonOnly` this refuses cross-site requests even
    from browsers that send neither header.
    """

    METHODS = ("POST", "PUT", "PATCH", "DELETE")
    REFUSED_SITES = (b"cross-site", b"same-site")

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...] | None = None) -> None:
        self.app, self.allowed = app, {h.lower() for h in allowed_hosts or ()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in self.METHODS:
            why = self._refusal(dict(scope.get("headers", [])))
            if why is not None:
                return await _reject(send, 403, f"cross-site request refused ({why})")
        await self.app(scope, receive, send)

    def _refusal(self, headers: dict[bytes, bytes]) -> str | None:
        """Why a request with ``headers`` is cross-site, or None."""
        site = headers.get(b"sec-fetch-site", b"").strip().lower()
        if site in self.REFUSED_SITES:
            return f"Sec-Fetch-Site: {site.decode()}"
        origin = headers.get(b"origin")
        if origin is None:
            return None
        parts = urlsplit(origin.decode("latin-1").strip())
        try:
            hostname = parts.hostname
        except ValueError:
            hostname = None
        same = parts.netloc.lower() == headers.get(b"host", b"").decode("latin-1").lower()
        if parts.scheme in ("http", "https") and hostname and (same or hostname in self.allowed or f"[{hostname}]" in self.allowed):
            return None
        return f"Origin {origin.decode('latin-1')[:100]!r} is not a host of this service"


def _is_json(content_type: bytes | None) -> bool:
    return content_type is not None and content_type.split(b";")[0].strip().lower() == b"application/json"


class RequestLimit:
    """503 (``Retry-After: 1``) for a request beyond ``limit`` in progress; the health check is exempt
    (its connections are bounded by :mod:`placer.serve.server`'s guard).

    Placed inside :class:`BodyLimit`, it counts a request from the end of its body to the start of
    its answer: a body still being received holds a connection and its bytes (both capped, and
    reclaimed from the slowest and the oldest under pressure), and an answer being delivered to a
    client that does not read holds a connection (evicted first under pressure, aborted after the
    send timeout), never one of these slots. (Every answer of this app is whole when it starts.)
    """

    OPEN_PATHS = ("/v1/health",)

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit, self.in_flight = app, limit, 0  # one event loop: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.OPEN_PATHS:
            return await self.app(scope, receive, send)
        if self.in_flight >= self.limit:
            return await _reject(send, 503, "too many requests in progress; retry shortly", {"Retry-After": "1"})
        self.in_flight += 1
        held = True

        async def answer(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                self.in_flight -= 1
            await send(message)

        try:
            await self.app(scope, receive, answer)
        finally:
            if held:
                self.in_flight -= 1


class BearerToken:
    """Every route but the health check needs ``Authorization: Bearer TOKEN`` of one of ``tenants`` (401 otherwise; a request
    with two ``Authorization`` headers gets 400 on every route, and its connection is closed); the
    request's :class:`~placer.serve.tenants.Tenant` is resolved here, once, and put on ``request.state.tenant`` (a
    tokenless server's one tenant on every route)."""

    OPEN_PATHS = ("/v1/health",)

    def __init__(self, app: ASGIApp, tenants: Tenants) -> None:
        self.app, self.tenants = app, tenants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = [value for name, value in scope.get("headers", []) if name == b"authorization"]
            if len(given) > 1:  # which one a proxy in front read is unknowable: neither is believed
                return await _reject(send, 400, "more than one Authorization header")
            tenant = self.tenants.resolve(given[0] if given else b"")
            if tenant is None and scope["path"] not in self.OPEN_PATHS:
                headers = {"WWW-Authenticate": "Bearer"}
                response = JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401, headers=headers)
                return await response(scope, receive, send)
            scope.setdefault("state", {})["tenant"] = tenant
        await self.app(scope, receive, send)


async def _reject(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    response = JSONResponse({"detail": detail}, status_code=status, headers={"Connection": "close", **(headers or {})})
    await response({"type": "http"}, _nothing_to_receive, send)


async def _nothing_to_receive() -> Message:
    raise RuntimeError("a rejection reads nothing from the request")


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
