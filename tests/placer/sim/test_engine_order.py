"""The engine's offer order (placer.sim.engine.order): numpy's stable argsort, ties in their order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.sim.engine.order import stable_sort


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, -3.0, 1e9]) | st.floats(-1e6, 1e6), max_size=70), st.integers(0, 5))
def test_the_order_is_numpys_stable_argsort(keys, spare):
    n = len(keys)
    ids, values = np.arange(100, 100 + n + spare, dtype=np.int64), np.array(keys + [7.0] * spare)
    expected = ids[:n][np.argsort(values[:n], kind="stable")]
    stable_sort(ids, values, n, np.zeros(n + spare, dtype=np.int64), np.zeros(n + spare))
    assert ids[:n].tolist() == expected.tolist() and values[:n].tolist() == sorted(keys)
    assert ids[n:].tolist() == list(range(100 + n, 100 + n + spare))  # past n: untouched
