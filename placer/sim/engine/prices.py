"""The price book: each placement shape the compiled engine meets, its id, and each graph's prediction on it.

The engine keys a shape exactly (:func:`~placer.sim.engine.kernels.shape_key`: devices per server, the slowest device's
kind, the smallest memory) and gives it an id; a graph's price on a shape id is asked of the cost model once
(:meth:`~placer.cost.CostModel.predict`, the same prediction the reference simulator uses) and kept here, per cost
model's :attr:`~placer.cost.CostModel.pricing_key` (everything a prediction reads besides the graph and the shape), so
every run on one cluster prices each (graph, shape) once, whichever of its cost models asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from placer.common.lru import LRUCache
from placer.cost import CostModel
from placer.graphs.job_graph import JobGraph
from placer.sim.fastest import fastest_iteration_s

from .shapes import WORDS, empty_slots, rehash

MAX_BOOKS = 16  # price books kept (one per pricing key: a cluster, its calibration and the model's settings)
_BOOKS: LRUCache[tuple, PriceBook] = LRUCache(MAX_BOOKS)  # an exact memo: a book's prices are a pure function of its key


def forget_prices() -> None:
    """Drop every price book (benchmarks that time the engine with its prices cold)."""
    _BOOKS.clear()


@dataclass
class PriceBook:
    """Shapes and prices on one cost model's cluster.

    ``slots`` and ``keys``: each shape's id by its exact key (:mod:`~placer.sim.engine.shapes`);
    ``price[g, s]``: graph row ``g``'s seconds per iteration on shape ``s`` (NaN: not asked yet); ``fits[g, s]`` whether
    it fits in memory there; ``rep_dev[s, :rep_deg[s]]``: devices of a placement with that shape (the first seen);
    ``servers[s]`` the servers it spans; ``labels[g, s]`` the cost model's split (``Strategy.label``) or None.
    """

    cost: CostModel
    degree_width: int
    rows: dict[str, int] = field(default_factory=dict)
    graphs: list[JobGraph] = field(default_factory=list)
    price: np.ndarray = field(default_factory=lambda: np.full((4, 256), np.nan))
    fits: np.ndarray = field(default_factory=lambda: np.zeros((4, 256), dtype=np.bool_))
    rep_dev: np.ndarray = field(init=False)  # (shapes, degree_width), made beside rep_deg
    rep_deg: np.ndarray = field(default_factory=lambda: np.zeros(256, dtype=np.int64))
    servers: np.ndarray = field(default_factory=lambda: np.zeros(256, dtype=np.int64))
    labels: dict[tuple[int, int], str | None] = field(default_factory=dict)
    fastest: dict[str, float] = field(default_factory=dict)  # graph key -> its fastest iteration on the idle cluster (s)
    n_shapes: int = 0  # the shapes keyed so far: a kernel that adds shapes counts them
    layout: int = 0  # bumped whenever the arrays are replaced by larger ones (a stream then takes the new ones)

    slots: np.ndarray = field(init=False)
    keys: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        room = self.rep_deg.shape[0]
        self.rep_dev = np.zeros((room, self.degree_width), dtype=np.int64)
        self.slots, self.keys = empty_slots(room), np.zeros((room, WORDS), dtype=np.int64)

    @classmethod
    def of(cls, cost: CostModel, degree_width: int) -> PriceBook:
        """The book of ``cost``'s pricing key holding placements of up to ``degree_width`` devices (the last
        :data:`MAX_BOOKS` keys asked for are kept)."""
        key = cost.pricing_key
        book = _BOOKS.get(key)
        if book is None:
            book = _BOOKS[key] = cls(cost, degree_width)
        elif book.degree_width < degree_width:
            book.rep_dev = np.hstack([book.rep_dev, np.zeros((book.rep_dev.shape[0], degree_width - book.degree_width), dtype=np.int64)])
            book.degree_width = degree_width
            book.layout += 1
        return book

    def fastest_iteration_s(self, graph: JobGraph) -> float:
        """:func:`~placer.sim.fastest.fastest_iteration_s` of ``graph``, kept."""
        found = self.fastest.get(graph.key)
        if found is None:
            found = self.fastest[graph.key] = fastest_iteration_s(self.cost, graph)
        return found

    def row(self, graph: JobGraph) -> int:
        """``graph``'s row of :attr:`price` (added on first use)."""
        row = self.rows.get(graph.key)
        if row is None:
            row = self.rows[graph.key] = len(self.graphs)
            self.graphs.append(graph)
            if row >= self.price.shape[0]:
                self.price = np.vstack([self.price, np.full_like(self.price, np.nan)])
                self.fits = np.vstack([self.fits, np.zeros_like(self.fits)])
                self.layout += 1
        return row

    def fill(self, rows: np.ndarray, shape_ids: np.ndarray) -> None:
        """Price each (graph row, shape id) pair with the cost model."""
        for g, s in zip(rows.tolist(), shape_ids.tolist(), strict=True):
            devices = tuple(self.rep_dev[s, : self.rep_deg[s]].tolist())
            shape = self.cost.shape(devices)
            prediction = self.cost.predict(self.graphs[g], shape)
            self.price[g, s], self.fits[g, s] = prediction.iteration_s, prediction.fits
            self.servers[s] = shape.servers
            self.labels[g, s] = prediction.strategy.label if prediction.strategy else None

    def grow(self) -> None:
        """Twice the room for shapes."""
        n = self.rep_deg.shape[0]
        self.price = np.hstack([self.price, np.full_like(self.price, np.nan)])
        self.fits = np.hstack([self.fits, np.zeros_like(self.fits)])
        self.layout += 1
        self.rep_dev = np.vstack([self.rep_dev, np.zeros_like(self.rep_dev)])
        self.rep_deg = np.concatenate([self.rep_deg, np.zeros(n, dtype=np.int64)])
        self.servers = np.concatenate([self.servers, np.zeros(n, dtype=np.int64)])
        self.keys = np.vstack([self.keys, np.zeros_like(self.keys)])
        self.slots = empty_slots(2 * n)
        rehash(self.keys, self.n_shapes, self.slots)
