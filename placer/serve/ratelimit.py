"""Per-client token buckets: how often one client may report step times (issue 30: a flood stays harmless)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict


class RateLimiter:
    """A token bucket per client key: ``rate_per_s`` tokens a second up to ``burst``; each request takes one.

    At most ``max_clients`` buckets are kept (least recently used dropped first: a dropped client
    starts again with a full bucket). Thread-safe.
    """

    def __init__(self, rate_per_s: float, burst: int, *, max_clients: int = 10_000, clock=time.monotonic) -> None:
        self.rate_per_s, self.burst, self.max_clients, self.clock = rate_per_s, burst, max_clients, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when counted)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take a token for ``key``: 0.0 if there was one, else the seconds until there will be (nothing taken)."""
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate_per_s)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate_per_s
            self._buckets[key] = (tokens - 1 if wait == 0 else tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return wait
