"""Bounded caches: exact LRU order, and caches that stay bounded however many graphs pass."""

import pytest

from placer.common.lru import LRUCache
from placer.cost import CostModel
from tests.placer.toys import chain, toy_cluster


def test_lru_evicts_the_least_recently_used():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # a is now the most recent
    cache["c"] = 3
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2
    with pytest.raises(ValueError):
        LRUCache(0)


def test_cost_model_caches_stay_bounded_and_exact_after_eviction():
    cost = CostModel(toy_cluster(2, 4), max_graphs=4, max_predictions=10)
    graphs = [chain().with_iterations(i + 1) for i in range(40)]  # 40 distinct graph keys
    first = [cost.predict(g, [0, 1, 4]).iteration_s for g in graphs]
    assert len(cost._compiled) <= 4 and len(cost._sequential) <= 4 and len(cost._profiles) <= 16 and len(cost._predictions) <= 10
    assert [cost.predict(g, [0, 1, 4]).iteration_s for g in graphs] == first  # recomputed after eviction, identical
