"""A bounded, thread-safe least-recently-used mapping for the caches of long-running processes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """At most ``maxsize`` entries and, with ``max_bytes``, at most that many bytes by ``sizeof``
    (an entry larger than ``max_bytes`` alone is not kept); reading or writing one makes it the
    most recent, the least recent goes first."""

    def __init__(self, maxsize: int, *, max_bytes: float | None = None, sizeof: Callable[[V], float] | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        if (max_bytes is None) != (sizeof is None):
            raise ValueError("give max_bytes and sizeof together")
        self.maxsize, self.max_bytes, self.sizeof = maxsize, max_bytes, sizeof
        self.bytes = 0.0
        self._data: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, float] = {}
        self._lock = threading.Lock()

    def get(self, key: K, default: V | None = None) -> V | None:
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                return default
            self._data.move_to_end(key)
            return value

    def __getitem__(self, key: K) -> V:
        """The value of ``key`` (now the most recent); :class:`KeyError` if it is not kept."""
        with self._lock:
            value = self._data[key]
            self._data.move_to_end(key)
            return value

    def __setitem__(self, key: K, value: V) -> None:
        max_bytes = self.max_bytes
        if self.sizeof is None or max_bytes is None:  # by count only (both or neither): the cost model's hot path
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                if len(self._data) > self.maxsize:
                    self._data.popitem(last=False)
            return
        size = self.sizeof(value)
        with self._lock:
            self.bytes -= self._sizes.pop(key, 0.0)
            self._data.pop(key, None)
            if size > max_bytes:
                return
            self._data[key], self._sizes[key] = value, size
            self.bytes += size
            while len(self._data) > self.maxsize or self.bytes > max_bytes:
                old, _ = self._data.popitem(last=False)
                self.bytes -= self._sizes.pop(old)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def items(self) -> list[tuple[K, V]]:
        """The entries, least recent first."""
        with self._lock:
            return list(self._data.items())

    def update(self, items: list[tuple[K, V]]) -> None:
        """Set each entry in turn, as ``self[key] = value`` does."""
        for key, value in items:
            self[key] = value

    def recent(self, count: int) -> list[V]:
        """The ``count`` most recently used values, most recent first (their order is left as it is)."""
        with self._lock:
            return [self._data[key] for key in reversed(self._data)][:count]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self.bytes = 0.0

    def __getstate__(self) -> dict:
        """Entries and limits, read under the lock; the lock itself is not state (pickle, copy and deepcopy give a new one)."""
        with self._lock:
            state = self.__dict__.copy()
            state["_data"], state["_sizes"] = OrderedDict(self._data), dict(self._sizes)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
