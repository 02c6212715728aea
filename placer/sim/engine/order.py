"""The order a decision point offers its waiting jobs in: a stable sort by their keys (EDF's deadlines, SJF's lengths)
that allocates nothing, so the event loop needs none of numba's runtime (:mod:`~placer.sim.engine.jit`)."""

from __future__ import annotations

from .jit import kernel


@kernel
def stable_sort(ids, keys, n, spare_ids, spare_keys):
    """Sort ``ids[:n]`` by ``keys[:n]`` (moved with them), ties kept in their order: ``np.argsort(kind="stable")``'s
    order, which any stable sort gives. Bottom-up merge sort through the spare arrays, allocating nothing."""
    width, src_ids, src_keys, dst_ids, dst_keys, swapped = 1, ids, keys, spare_ids, spare_keys, False
    while width < n:
        for low in range(0, n, 2 * width):
            middle, high = min(low + width, n), min(low + 2 * width, n)
            a, b = low, middle
            for out in range(low, high):
                if a < middle and (b >= high or src_keys[a] <= src_keys[b]):
                    dst_ids[out], dst_keys[out] = src_ids[a], src_keys[a]
                    a += 1
                else:
                    dst_ids[out], dst_keys[out] = src_ids[b], src_keys[b]
                    b += 1
        src_ids, src_keys, dst_ids, dst_keys = dst_ids, dst_keys, src_ids, src_keys
        swapped = not swapped
        width *= 2
    if swapped:
        for i in range(n):
            ids[i], keys[i] = src_ids[i], src_keys[i]
