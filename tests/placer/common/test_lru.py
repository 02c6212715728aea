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


def test_lru_copies_keep_their_entries_and_order_and_never_share_a_table():
    import copy
    import pickle

    cache = LRUCache(3, max_bytes=10.0, sizeof=float)
    cache["a"], cache["b"], cache["c"] = 1.0, 2.0, 3.0
    assert cache.get("a") == 1.0  # order b, c, a
    for twin in (copy.copy(cache), copy.deepcopy(cache), pickle.loads(pickle.dumps(cache))):
        assert twin.items() == [("b", 2.0), ("c", 3.0), ("a", 1.0)] and twin.bytes == 6.0
        twin["d"] = 5.0  # 4 entries, 11 bytes: b, the least recent, goes, in the twin only
        assert (
            twin.items() == [("c", 3.0), ("a", 1.0), ("d", 5.0)]
            and twin.bytes == 9.0
            and cache.items() == [("b", 2.0), ("c", 3.0), ("a", 1.0)]
        )
        assert twin._lock is not cache._lock
