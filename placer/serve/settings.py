"""The service's settings: one frozen object, built once at the edge (``placer serve``) and passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # a 20,000-op graph is 4.4 MB of compact JSON
DEFAULT_MAX_GRAPH_OPS = 20_000  # ops (forward + backward): parsed and compiled in < 2 s, < 100 MB (bench_service.py)
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024  # graphs and their cost-model work kept between requests


class ServiceSettings(BaseModel):
    """How the service bounds requests, keeps state and admits clients.

    ``state_path``: the SQLite file of reservations (None: memory only; see
    :class:`~placer.serve.reservations.ReservationStore` for ``reset_state`` and
    ``create_state_folder``); ``max_cached_graphs`` and ``cache_bytes``: graphs whose cost-model
    work is kept (LRU); ``token``: the bearer token every request but the health check must carry
    (None: none); ``allowed_hosts``: the host names a request's ``Host`` header may name (None: any).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1, description="larger bodies get 413")
    body_timeout_s: float = Field(default=30.0, gt=0, description="seconds a client has to send a body (408 after)")
    max_graph_ops: int = Field(default=DEFAULT_MAX_GRAPH_OPS, ge=1, description="larger graphs get 413")
    max_cached_graphs: int = Field(default=512, ge=1)
    cache_bytes: float = Field(default=DEFAULT_CACHE_BYTES, gt=0)
    state_path: Path | None = None
    reset_state: bool = False
    create_state_folder: bool = False
    token: str | None = Field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] | None = None
    report_rate_per_s: float = Field(default=2.0, gt=0, le=1e6, description="step-time reports a client may send per second (429 past it)")
    report_burst: int = Field(default=20, ge=1, le=1_000_000, description="reports a client may send at once before the rate applies")
