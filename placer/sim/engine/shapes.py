"""The price book's shape ids as arrays: an open-addressed hash table from a shape's exact key (four int64 words,
:func:`~placer.sim.engine.options.partition_key`) to its id, which kernels read and extend without numba's runtime.

``slots`` (H,) holds an id or -1 (empty), ``keys`` (room, 4) each id's key, H a power of two at least twice the room
for ids, so a probe always ends at an empty slot. Ids are given in the order keys are first met, as the typed dict
they replace gave them.
"""

from __future__ import annotations

import numpy as np

from .codes import KEY_WORDS, S_NSHAPES
from .jit import kernel

WORDS = KEY_WORDS + 1  # a key's words: the partition's bits, then the slowest device's kinds


def empty_slots(room: int) -> np.ndarray:
    """The slots of a table with room for ``room`` ids, all empty."""
    return np.full(1 << max(int(2 * room - 1).bit_length(), 1), -1, dtype=np.int64)


@kernel
def _start(k0, k1, k2, k3, mask):
    h = (k0 * 0x1E3779B97F4A7C15) ^ (k1 * 0x42B2AE3D27D4EB4F) ^ (k2 * 0x165667B19E3779F9) ^ (k3 * 0x27D4EB2F165667C5)  # int64: wraps
    h ^= h >> 29
    return h & mask


@kernel
def find(key, slots, keys):
    """The id of ``key`` (a 4-tuple of int64), or -1 with the slot it would take stored as ``-(slot + 2)``."""
    k0, k1, k2, k3 = key
    mask = slots.shape[0] - 1
    at = _start(k0, k1, k2, k3, mask)
    while True:
        sid = slots[at]
        if sid < 0:
            return -(at + 2)
        if keys[sid, 0] == k0 and keys[sid, 1] == k1 and keys[sid, 2] == k2 and keys[sid, 3] == k3:
            return sid
        at = (at + 1) & mask


@kernel
def shape_id(key, ist, slots, keys):
    """``key``'s id, given the next one (``ist[S_NSHAPES]``) when it is new; -1 when there is no room for a new id."""
    found = find(key, slots, keys)
    if found >= 0:
        return found
    sid = ist[S_NSHAPES]
    if sid >= keys.shape[0]:
        return -1
    slots[-(found + 2)] = sid
    for i in range(WORDS):
        keys[sid, i] = key[i]
    ist[S_NSHAPES] = sid + 1
    return sid


@kernel
def rehash(keys, n, slots):
    """Put ids 0..n-1 (their keys in ``keys``) into ``slots`` (all empty, of a table with room for them)."""
    for sid in range(n):
        found = find((keys[sid, 0], keys[sid, 1], keys[sid, 2], keys[sid, 3]), slots, keys)
        slots[-(found + 2)] = sid
