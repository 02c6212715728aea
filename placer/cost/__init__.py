"""Cost model: iteration time, memory and parallelisation strategy of a placed job.

One module per concern, each with its formula in the docstring: :mod:`~placer.cost.collectives`
(hierarchical ring all-reduce, point-to-point), :mod:`~placer.cost.data_parallel`,
:mod:`~placer.cost.tensor_parallel`, :mod:`~placer.cost.pipeline`, :mod:`~placer.cost.sipml`
(PAC-ML's op splitting), :mod:`~placer.cost.profile` (graphs as arrays, rescaled to a device)
and :mod:`~placer.cost.model`, which combines them and picks the fastest factorisation.
"""

from placer.cost.model import STRATEGIES, CostModel, Prediction, Strategy
from placer.cost.shape import PlacementShape

__all__ = ["STRATEGIES", "CostModel", "PlacementShape", "Prediction", "Strategy"]
