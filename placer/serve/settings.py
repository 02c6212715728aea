"""The service's settings: one frozen object, built once at the edge (``placer serve``) and passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # a 20,000-op graph is 4.4 MB of compact JSON
DEFAULT_MAX_GRAPH_OPS = 20_000  # ops (forward + backward): parsed and compiled in < 2 s, < 100 MB (bench_service.py)
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024  # graphs and their cost-model work kept between requests
MAX_BODY_BYTES = 1024 * 1024 * 1024  # the most --max-body-mb may allow
MAX_CACHE_BYTES = 64 * 1024**3
MAX_CONNECTIONS = 100_000


class ServiceSettings(BaseModel):
    """How the service bounds requests, keeps state and admits clients.

    ``state_path``: the SQLite file of reservations (None: memory only; see
    :class:`~placer.serve.reservations.ReservationStore` for ``reset_state`` and
    ``create_state_folder``); ``max_cached_graphs`` and ``cache_bytes``: graphs whose cost-model
    work is kept (LRU); ``token``: the bearer token every request but the health check must carry
    (None: none); ``allowed_hosts``: the host names a request's ``Host`` header may name (None: any).

    Connections (:mod:`placer.serve.server`): at most ``max_connections`` requests whose bodies
    have come are served at once (more get 503; the health check is exempt and has a few
    connections of its own); a client address holds at most ``max_connections_per_client``
    connections; a connection that has not sent a request's complete headers within
    ``header_timeout_s`` is closed, and when connections run short the oldest idle one, else the
    one receiving its request slowest, is closed to admit a new one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1, le=MAX_BODY_BYTES, description="larger bodies get 413")
    body_timeout_s: float = Field(default=30.0, gt=0, description="seconds a client has to send a body (408 after)")
    max_graph_ops: int = Field(default=DEFAULT_MAX_GRAPH_OPS, ge=1, description="larger graphs get 413")
    max_cached_graphs: int = Field(default=512, ge=1)
    cache_bytes: float = Field(default=DEFAULT_CACHE_BYTES, gt=0, le=MAX_CACHE_BYTES)
    state_path: Path | None = None
    reset_state: bool = False
    create_state_folder: bool = False
    token: str | None = Field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] | None = None
    report_rate_per_s: float = Field(default=2.0, gt=0, le=1e6, description="step-time reports a client may send per second (429 past it)")
    report_burst: int = Field(default=20, ge=1, le=1_000_000, description="reports a client may send at once before the rate applies")
    max_connections: int = Field(default=64, ge=1, le=MAX_CONNECTIONS, description="requests served at once; more get 503")
    max_connections_per_client: int = Field(default=16, ge=1, le=MAX_CONNECTIONS, description="open connections per client address")
    header_timeout_s: float = Field(default=5.0, gt=0, le=3600, description="seconds a connection has to send a request's headers")
