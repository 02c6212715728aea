"""The shape of a placement: what an iteration's time depends on, and the cost model's cache key."""

from __future__ import annotations

import math
from typing import NamedTuple


class PlacementShape(NamedTuple):
    """What an iteration's time depends on in a placement (its cache key).

    ``counts``: devices per spanned server, largest first; ``device``: the device model of the
    slowest placed device (None: generic); ``memory_bytes``: the smallest placed device's memory;
    ``compute_scale``: the slowest device's factor on its model's sustained rates.
    """

    degree: int
    servers: int
    min_per_server: int
    max_per_server: int
    speed: float
    counts: tuple[int, ...] = ()
    device: str | None = None
    memory_bytes: float = math.inf
    compute_scale: float = 1.0
