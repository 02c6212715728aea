"""Predictions and placement tables shared by every cost model of one pricing key
(:attr:`~placer.cost.CostModel.pricing_key`)."""

from __future__ import annotations

from collections.abc import Callable

from placer.common.lru import LRUCache
from placer.cost.prediction import Prediction
from placer.cost.tables import Placements

MAX_SHARED_PRICINGS = 4  # pricing keys (a cluster, its calibration, the model's settings) whose predictions are kept
_SHARED: LRUCache[tuple, LRUCache[tuple, Prediction]] = LRUCache(MAX_SHARED_PRICINGS)  # an exact memo


def shared_predictions(key: tuple, maxsize: int) -> LRUCache[tuple, Prediction]:
    """The predictions of every cost model with pricing key ``key`` (a prediction is a pure function of the key, the
    graph and the shape): a recipe's and an evaluation's many models of one cluster price each (graph, shape) once. The
    last :data:`MAX_SHARED_PRICINGS` keys are kept, each bounded as one model's were (``maxsize`` predictions)."""
    memo = _SHARED.get(key)
    if memo is None or memo.maxsize != maxsize:
        memo = _SHARED[key] = LRUCache(maxsize)
    return memo


_PLACEMENTS: LRUCache[tuple, Placements] = LRUCache(MAX_SHARED_PRICINGS)


def shared_placements(key: tuple, max_graphs: int, make: Callable[[], Placements]) -> Placements:
    """The placement shapes and tables (``make()`` the first time) of every cost model with pricing key ``key``: a
    table's predictions and what callers derive from them are functions of the key, the graph and the free devices per
    server, so a recipe's and an evaluation's many models of one cluster build each table once. The last
    :data:`MAX_SHARED_PRICINGS` keys are kept, each table holding at most ``max_graphs`` graphs as one model's did."""
    placements = _PLACEMENTS.get((key, max_graphs))
    if placements is None:
        placements = _PLACEMENTS[(key, max_graphs)] = make()
    return placements
