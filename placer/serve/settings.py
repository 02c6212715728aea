"""The service's settings: one frozen object, built once at the edge (``placer serve``) and passed down."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from placer.serve.tenants import RESERVED_NAMES, Tenant, Tenants

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # a 20,000-op graph is 4.4 MB of compact JSON
DEFAULT_MAX_GRAPH_OPS = 20_000  # ops (forward + backward): parsed and compiled in < 2 s, < 100 MB (bench_service.py)
DEFAULT_MAX_GRAPH_EDGES = 60_000  # edges: 3 per op of the default op limit (the shipped graphs have 1.5-1.6)
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024  # graphs (held and cached: half) and their cost-model work (half) kept
MAX_BODY_BYTES = 1024 * 1024 * 1024  # the most --max-body-mb may allow
MAX_CACHE_BYTES = 64 * 1024**3
MAX_CONNECTIONS = 100_000
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 0.1, 3600.0  # the body, header and send timeouts


class ServiceSettings(BaseModel):
    """How the service bounds requests, keeps state and admits clients.

    ``state_path``: the SQLite file of reservations (None: memory only; see
    :class:`~placer.serve.reservations.ReservationStore` for ``reset_state`` and
    ``create_state_folder``); ``cache_bytes``: the memory for graphs, half for the graphs themselves (running
    jobs', kept reports' and, in what is left, a cache of at most ``max_cached_graphs``:
    :mod:`placer.serve.graphs`), half for their cost-model work (LRU); ``max_graph_ops`` and ``max_graph_edges``: the
    largest graph accepted (413 beyond); ``token``: the bearer token every request but the health check must carry
    (None: none) of the one tenant, or ``tenants``: named clients with their own tokens (:mod:`placer.serve.tenants`; not
    with ``token``); ``allowed_hosts``: the host names a request's ``Host`` header may name (None: any).

    Connections (:mod:`placer.serve.server`): at most ``max_connections`` requests whose bodies
    have come are served at once (more get 503; the health check is exempt and has a few
    connections of its own); a client address holds at most ``max_connections_per_client``
    connections; a connection that has not sent a request's complete headers within
    ``header_timeout_s`` is closed, one whose writes stay paused (its client not reading) for
    ``send_timeout_s`` is aborted, and when connections run short one whose writes are paused is
    closed to admit a new one, else one of the address that has received nothing of a request
    (past the address's cap) or the idle one or the one receiving its request slowest (past the
    global cap); failing that the new one gets 503. ``trusted_proxies``: the proxies whose
    ``X-Forwarded-For`` names the client (for the per-client limits on requests; a proxy's own
    address is not held to ``max_connections_per_client``); from any other peer, and with none,
    the header is ignored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1, le=MAX_BODY_BYTES, description="largest request body (413 beyond)")
    body_timeout_s: float = Field(
        default=30.0, ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S, description="seconds a client has to send a request's body (408 after)"
    )
    max_graph_ops: int = Field(
        default=DEFAULT_MAX_GRAPH_OPS, ge=1, description="largest job graph accepted, in ops (forward + backward; 413 beyond)"
    )
    max_graph_edges: int = Field(default=DEFAULT_MAX_GRAPH_EDGES, ge=0, description="largest job graph accepted, in edges (413 beyond)")
    max_cached_graphs: int = Field(default=512, ge=1)
    cache_bytes: float = Field(
        default=DEFAULT_CACHE_BYTES,
        gt=0,
        le=MAX_CACHE_BYTES,
        description="memory for graphs (running, reported, cached: half) and cost-model work (half)",
    )
    state_path: Path | None = None
    reset_state: bool = False
    create_state_folder: bool = False
    token: str | None = Field(default=None, repr=False)
    tenants: tuple[Tenant, ...] | None = Field(default=None, repr=False, min_length=1)
    allowed_hosts: tuple[str, ...] | None = None
    report_rate_per_s: float = Field(default=2.0, gt=0, le=1e6, description="step-time reports a client may send per second (429 past it)")
    report_burst: int = Field(default=20, ge=1, le=1_000_000, description="reports a client may send at once before the rate applies")
    max_connections: int = Field(default=64, ge=1, le=MAX_CONNECTIONS, description="requests served at once; more get 503")
    max_connections_per_client: int = Field(default=16, ge=1, le=MAX_CONNECTIONS, description="open connections per client address")
    header_timeout_s: float = Field(
        default=5.0, ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S, description="seconds a connection has to send a request's headers (closed after)"
    )
    send_timeout_s: float = Field(
        default=10.0,
        ge=MIN_TIMEOUT_S,
        le=MAX_TIMEOUT_S,
        description="seconds a connection's writes may stay paused, its client not reading (aborted after)",
    )
    trusted_proxies: tuple[str, ...] = Field(
        default=(), description="addresses or networks of proxies whose X-Forwarded-For is believed (none: it is ignored everywhere)"
    )

    @model_validator(mode="after")
    def _one_way_in(self) -> ServiceSettings:
        if self.token is not None and self.tenants is not None:
            raise ValueError("give a token or tenants, not both")
        reserved = sorted({t.name for t in self.tenants or ()} & RESERVED_NAMES)
        if reserved:
            raise ValueError(f"tenant name {reserved[0]!r} is reserved (the single tenant of a server without tenants)")
        return self

    def access(self) -> Tenants:
        """Who may use the service: the ``tenants``, else the one tenant of ``token`` (or of no token)."""
        return Tenants(list(self.tenants)) if self.tenants is not None else Tenants.single(self.token)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Each an IP address or network (CIDR), written as its network: ``10.0.0.1`` -> ``10.0.0.1/32``."""
        out = []
        for item in value:
            try:
                out.append(str(ipaddress.ip_network(item.strip(), strict=False)))
            except ValueError:
                raise ValueError(f"trusted proxy {item!r} is not an IP address or network") from None
        return tuple(out)
