"""The engine's shape ids (placer.sim.engine.shapes): the ids a dict gives in first-seen order, across growth, and runs
whose shapes outgrow a price book's room as the reference simulator runs them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.registry import make_heuristic
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph
from placer.sim import rollout
from placer.sim.engine import codes, prices
from placer.sim.engine.shapes import WORDS, empty_slots, rehash, shape_id
from placer.sim.engine.stream import run_program
from placer.sim.queueing import QueueConfig
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload

WORD = st.integers(-(2**63), 2**63 - 1)
KEYS = st.lists(st.tuples(WORD, WORD, WORD, WORD) | st.sampled_from([(0, 0, 0, 0), (1, 0, 0, 0), (0, 0, 0, 1)]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(KEYS, st.integers(1, 8))
def test_ids_are_a_dicts_first_seen_order_through_growth(keys, room):
    slots, table, ist, ids = empty_slots(room), np.zeros((room, WORDS), dtype=np.int64), np.zeros(codes.N_STATE, dtype=np.int64), {}
    for key in keys:
        sid = shape_id(key, ist, slots, table)
        if sid < 0:  # full: nothing was added; grow as the price book does and ask again
            assert len(ids) == room and key not in ids and ist[codes.S_NSHAPES] == room
            table, room = np.vstack([table, np.zeros_like(table)]), 2 * room
            slots = empty_slots(room)
            rehash(table, int(ist[codes.S_NSHAPES]), slots)
            sid = shape_id(key, ist, slots, table)
        assert sid == ids.setdefault(key, len(ids))
    assert ist[codes.S_NSHAPES] == len(ids)
    assert all(shape_id(key, ist, slots, table) == sid for key, sid in ids.items())  # every key still found, none added
    assert ist[codes.S_NSHAPES] == len(ids) and np.count_nonzero(slots >= 0) == len(ids)


@pytest.mark.parametrize("queue", ["none", "edf-bf"])
def test_a_run_whose_shapes_outgrow_the_book_is_the_references(monkeypatch, queue):
    cluster = load_cluster("mixed")
    cost = CostModel(cluster)
    room = 2  # a book with room for two shapes: the run grows it (status GROW) several times

    def tiny_book(cls, cost, width):
        book = prices._BOOKS.get(cost.pricing_key)
        if book is None:
            nan, i8 = np.full((4, room), np.nan), np.zeros(room, dtype=np.int64)
            book = cls(cost, width, price=nan, fits=np.zeros((4, room), dtype=np.bool_), rep_deg=i8, servers=i8.copy())
            prices._BOOKS[cost.pricing_key] = book
        return book

    monkeypatch.setattr(prices, "_BOOKS", prices.LRUCache(prices.MAX_BOOKS))
    monkeypatch.setattr(prices.PriceBook, "of", classmethod(tiny_book))
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    seq = cost.sequential_iteration_s
    size = SizeDistribution("loguniform:0.1:10")
    workload = Workload(graphs, BetaDistribution("C"), 0.9, cluster.num_devices, 150, sequential_iteration_s=seq, size=size)
    for seed, policy in enumerate(["lean", "para_max+spread", "eff:0.5+best_fit"]):
        jobs = list(workload.jobs(np.random.default_rng(seed)))
        config = QueueConfig.parse(queue)
        engine = run_program(cost, jobs, make_heuristic(policy).program(), config)
        reference = rollout.simulate(cost, jobs, make_heuristic(policy).decide, queue=config)
        assert (engine.records, engine.busy_timeline) == (reference.records, reference.busy_timeline), policy
    book = prices._BOOKS.get(cost.pricing_key)
    assert book.n_shapes > 8 and book.rep_deg.shape[0] >= book.n_shapes  # it grew past 2, 4 and 8
    assert len({tuple(key) for key in book.keys[: book.n_shapes].tolist()}) == book.n_shapes  # each shape keyed once
