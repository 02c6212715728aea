"""The graphs the service holds, one copy per content key, within one byte budget.

Every graph the server keeps counts against ``max_bytes``, by :func:`graph_bytes` (ops + edges times
:data:`BYTES_PER_GRAPH_ELEMENT`, measured with ``tracemalloc``: tests/placer/serve/test_service_memory.py):

- graphs *held* by a holder (a running job, for its step-time reports; the reported step times kept
  for calibration) stay until their last holder lets go; two jobs of one graph hold one copy;
- the others are a cache (least recently used first out) that a ``graph_key`` request or the next
  placement of the same graph reuses; they make room for a graph to be held.

A graph that would take the held graphs past the budget is refused with :class:`GraphMemoryFullError`
(the service answers 413 with ``Retry-After``: room comes back as jobs are released); one larger than
the whole budget is refused the same way, without ``Retry-After``. Thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from placer.graphs.job_graph import JobGraph
from placer.serve.errors import GraphMemoryFullError

BYTES_PER_GRAPH_ELEMENT = 500  # a JobGraph in memory, per op or edge (measured 493: python benchmarks/bench_service.py --large-only)
MIB = 1024 * 1024


class TenantGraph(JobGraph):
    """A graph as one tenant's: the same ops (shared, not copied), keyed by :func:`tenant_graph_key` of the tenant and the
    content key, so each tenant's ``graph_key``, cost-model caches and fitted own constants (``jobs.KEY.*``) are its own:
    another tenant's key is unknown to it, and its reports never move another tenant's predictions."""

    __slots__ = ("_tenant", "_content_key")
    _tenant: str
    _content_key: str

    @classmethod
    def of(cls, graph: JobGraph, tenant: str) -> TenantGraph:
        """``graph`` (a plain graph: its key is its content's) as ``tenant``'s."""
        twin = object.__new__(cls)
        for slot in JobGraph.__slots__:
            setattr(twin, slot, getattr(graph, slot))
        twin._content_key = graph.key
        twin._key = tenant_graph_key(tenant, graph.key)
        twin._tenant = tenant
        return twin

    @property
    def tenant(self) -> str:
        return self._tenant

    @property
    def content_key(self) -> str:
        """The key of the graph's content (every tenant's graph of that content has it)."""
        return self._content_key


def content_key(graph: JobGraph) -> str:
    """The key of ``graph``'s content, whoever's graph it is (the evidence rules count graphs by content)."""
    return graph.content_key if isinstance(graph, TenantGraph) else graph.key


def tenant_graph_key(tenant: str, content_key: str) -> str:
    """The key of the graph of ``content_key`` as ``tenant``'s: 16 hex digits of a SHA-256 of both (a tenant's name holds
    no NUL byte), as long as a content key and as unguessable without the content."""
    return hashlib.sha256(f"placer tenant graph\0{tenant}\0{content_key}".encode()).hexdigest()[:16]


def graph_owner(graph: JobGraph, single: str) -> str:
    """The tenant whose graph ``graph`` is: a :class:`TenantGraph`'s, else ``single`` (the single tenant of a server without
    tenants keeps content keys, as before tenants: no other tenant shares that server)."""
    return graph.tenant if isinstance(graph, TenantGraph) else single


def graph_bytes(graph: JobGraph) -> float:
    """The bytes ``graph`` takes in memory, estimated: (ops + edges) x :data:`BYTES_PER_GRAPH_ELEMENT`."""
    return float((graph.num_ops + graph.num_edges) * BYTES_PER_GRAPH_ELEMENT)


class GraphPool:
    """Graphs by content key, held (by named holders) or cached, within ``max_bytes`` (estimated bytes) and, for the
    cached ones, ``max_cached`` graphs."""

    def __init__(self, max_bytes: float, max_cached: int) -> None:
        self.max_bytes, self.max_cached = max_bytes, max_cached
        self._graphs: OrderedDict[str, JobGraph] = OrderedDict()  # least recently used first
        self._holders: dict[str, set[str]] = {}  # key -> holders (held graphs only)
        self._bytes: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def bytes(self) -> float:
        """Estimated bytes of every graph kept (held and cached)."""
        return sum(self._bytes.values())

    @property
    def held_bytes(self) -> float:
        """Estimated bytes of the graphs some holder holds."""
        return sum(self._bytes[key] for key in self._holders)

    def get(self, key: str) -> JobGraph | None:
        """The kept graph of content key ``key`` (now the most recent), or None."""
        with self._lock:
            graph = self._graphs.get(key)
            if graph is not None:
                self._graphs.move_to_end(key)
            return graph

    def __contains__(self, key: object) -> bool:
        return key in self._graphs

    def __len__(self) -> int:
        """Graphs kept, held and cached."""
        return len(self._graphs)

    def admit(self, graph: JobGraph, holder: str | None = None) -> JobGraph:
        """The kept copy of ``graph`` (``graph`` itself if none was kept), held by ``holder`` if given, else cached.
        :class:`GraphMemoryFullError` if held, it would take the held graphs past the budget (nothing changes)."""
        with self._lock:
            kept = self._graphs.get(graph.key)
            if kept is None:
                size = graph_bytes(graph)
                if holder is not None:
                    self._check_room(graph, size)
                elif size > self.max_bytes:
                    return graph  # too large to cache: used by this request only
                kept = self._graphs[graph.key] = graph
                self._bytes[graph.key] = size
            elif holder is not None and graph.key not in self._holders:
                self._check_room(kept, self._bytes[graph.key])
            self._graphs.move_to_end(graph.key)
            if holder is not None:
                self._holders.setdefault(graph.key, set()).add(holder)
            self._evict()
            return kept

    def hold(self, key: str, holder: str, graph: JobGraph | None = None) -> None:
        """``holder`` holds the kept graph ``key`` too; one not kept is kept if given as ``graph``, without a check of
        room (the caller bounds what it holds so: the kept reports), else ignored."""
        with self._lock:
            if key not in self._graphs:
                if graph is None:
                    return
                self._graphs[key], self._bytes[key] = graph, graph_bytes(graph)
            self._holders.setdefault(key, set()).add(holder)

    def let_go(self, key: str, holder: str) -> None:
        """``holder`` no longer holds graph ``key``; with no holder left it is cached (and may be evicted)."""
        with self._lock:
            holders = self._holders.get(key)
            if holders is None:
                return
            holders.discard(holder)
            if not holders:
                del self._holders[key]
                self._evict()

    def recent(self, count: int) -> list[JobGraph]:
        """The ``count`` most recently used graphs, most recent first."""
        with self._lock:
            return [self._graphs[key] for key in reversed(self._graphs)][:count]

    def _check_room(self, graph: JobGraph, size: float) -> None:
        held = sum(self._bytes[key] for key in self._holders)
        if held + size <= self.max_bytes:
            return
        mib = self.max_bytes / MIB
        if size > self.max_bytes:
            raise GraphMemoryFullError(
                f"graph {graph.name[:64]!r} ({graph.num_ops} ops, {graph.num_edges} edges) needs about {size / MIB:.0f} MiB,"
                f" more than this server's graph memory ({mib:.0f} MiB)",
                retry_after_s=None,
            )
        raise GraphMemoryFullError(
            f"this server holds {held / MIB:.0f} MiB of graphs of running jobs and kept reports (of {mib:.0f} MiB):"
            f" graph {graph.name[:64]!r} needs {size / MIB:.0f} MiB more; retry when jobs are released",
            retry_after_s=30.0,
        )

    def _evict(self) -> None:
        """Drop cached (unheld) graphs, least recent first, past the budget or past ``max_cached`` of them (lock held)."""
        total = sum(self._bytes.values())
        cached = len(self._graphs) - len(self._holders)
        for key in [k for k in self._graphs if k not in self._holders]:
            if total <= self.max_bytes and cached <= self.max_cached:
                return
            del self._graphs[key]
            total -= self._bytes.pop(key)
            cached -= 1
