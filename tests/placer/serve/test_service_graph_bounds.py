"""Every per-graph structure of the service and its cost model is bounded (issue 82, item 3): placing graph after
distinct graph keeps at most the bound of each, counted exactly."""

from __future__ import annotations

import json

import pytest

from placer.baselines.registry import make_heuristic
from placer.common.lru import LRUCache
from placer.cost.tables import DERIVED_PER_GRAPH, PlacementTable
from placer.serve.occupancy import Occupancy
from placer.serve.settings import ServiceSettings
from tests.placer.toys import op, toy_cluster, toy_graph

BOUND = 8  # max_cached_graphs: the cost model's max_graphs, so each table's too
GRAPHS = 40


def _body(i: int) -> bytes:
    graph = toy_graph({"a": op(1.0 + i / 100), "b": op(2.0)}, {("a", "b"): 1e6}, name=f"g{i}")
    return json.dumps({"graph": graph.to_dict(), "beta": 1.0}).encode()


@pytest.mark.parametrize("policy", ["fixed:1", "lean"])
def test_placing_many_distinct_graphs_keeps_each_per_graph_structure_at_its_bound(policy):
    state = Occupancy(toy_cluster(2, 4), make_heuristic(policy), ServiceSettings(max_cached_graphs=BOUND))
    try:
        for i in range(GRAPHS):
            decision = state.place(state.parse(_body(i)))
            if decision.job_id is not None:
                state.release(decision.job_id)
        tables: list[PlacementTable] = [t for _, t in state.cost._placed._tables.items()]
        assert tables, "no placement table was built"
        sizes = [(len(t.predicted), len(t.best), len(t.derived)) for t in tables]
        assert max(p for p, _, _ in sizes) == BOUND, sizes  # full, and no fuller
        assert all(p <= BOUND and b <= BOUND and d <= DERIVED_PER_GRAPH * BOUND for p, b, d in sizes), sizes
        assert len(state.cost._by_shape) == BOUND and len(state.cost._sequential) == BOUND
        assert len(state.graphs) == BOUND and state.jobs == {} and state.job_graphs == {}
    finally:
        state.close()


def test_a_table_is_dict_like_for_its_callers():
    table = PlacementTable((1,), ("pack",), 4, 1, max_graphs=2)
    table.predicted["a"], table.predicted["b"], table.best["a"] = (), (), 1.0
    assert table.predicted["a"] == () and "a" in table.predicted and table.predicted.get("z") is None
    table.predicted["c"] = ()  # "b" is now the least recent: out
    assert "b" not in table.predicted and len(table.predicted) == 2 and isinstance(table.predicted, LRUCache)
    with pytest.raises(KeyError):
        table.predicted["b"]
