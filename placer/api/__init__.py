"""The library API: ``placer.place`` and ``placer.predict`` (pure functions of their arguments),
:class:`Placer` (a session that keeps a policy's online statistics across queries) and their
typed answers. The service (:mod:`placer.serve`) answers through a :class:`Placer`.
"""

from placer.api.query import place, predict
from placer.api.session import Placer
from placer.api.types import ClusterState, PlacementDecision, PlacementPrediction

__all__ = ["ClusterState", "PlacementDecision", "PlacementPrediction", "Placer", "place", "predict"]
