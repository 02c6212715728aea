"""The observation's compiled columns against the numpy expressions they replaced (kept here as the reference): the same
bits on generated clusters, free patterns and jobs, ties, NaN and infinities included."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.envs.feature_kernels import group_columns, option_job_columns
from placer.envs.features import GROUP_FEATURES, OPTION_FEATURES, _Groups
from tests.placer.toys import toy_cluster


def reference_groups(groups: _Groups, free, free_at, now: float, time_left_s: float, max_groups: int) -> np.ndarray:
    """``group_arrays``' columns as numpy computed them before the kernel."""
    busy = ~free
    until = np.minimum((free_at - now) / time_left_s, 4) / 4
    busy_until = np.where(busy, until, 0.0)
    out = groups.static.copy()
    if groups.single:
        n = len(busy)
        out[:n, 0] = free
        out[:n, 2] = busy_until
        out[:n, 3] = busy_until
    else:
        group = groups.group
        busy_count = np.bincount(group, weights=busy, minlength=max_groups)
        out[:, 2] = np.bincount(group, weights=busy_until, minlength=max_groups) / np.maximum(busy_count, 1)
        least = np.zeros(max_groups)
        if groups.used:
            least[: groups.used] = np.minimum.reduceat(np.where(busy, until, np.inf), groups.starts)
            least[~np.isfinite(least)] = 0.0
        out[:, 3] = least
        out[:, 0] = np.bincount(group, weights=free, minlength=max_groups) / groups.safe
    np.minimum(np.maximum(out, 0.0, out=out), 4.0, out=out)
    return out


def reference_job_columns(rows, fit, degree, iteration, iterations, limit, left, seq) -> np.ndarray:
    rows = rows.copy()
    jct = iteration * iterations
    rows[fit, 0] = jct <= limit
    rows[fit, 1] = np.minimum(jct / left, 4) / 4
    rows[fit, 2] = np.minimum(degree * jct / seq, 4) / 4
    return rows


UNTIL = st.one_of(st.floats(0.0, 1e4), st.sampled_from([0.0, 1.0, 2.5, np.inf, np.nan]))


@settings(max_examples=300, deadline=None)
@given(
    servers=st.integers(1, 9),
    per_server=st.integers(1, 4),
    max_groups=st.integers(1, 12),
    data=st.data(),
    time_left_s=st.one_of(st.floats(1e-9, 1e5), st.sampled_from([1e-9, 1.0, 37.5])),
)
def test_group_columns_give_the_numpy_bits(servers, per_server, max_groups, data, time_left_s):
    cluster = toy_cluster(servers, per_server)
    n = cluster.num_devices
    free = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    now = data.draw(st.sampled_from([0.0, 12.25, 1e6]))
    free_at = now + np.array(data.draw(st.lists(UNTIL, min_size=n, max_size=n)), dtype=float)
    groups = _Groups(cluster, max_groups)
    out = groups.static.copy()
    group_columns(free, free_at, now, time_left_s, groups.group, groups.single, groups.used, groups.starts, groups.safe, out)
    expected = reference_groups(groups, free, free_at, now, time_left_s, max_groups)
    assert out.shape == (max_groups, GROUP_FEATURES)
    assert out.tobytes() == expected.tobytes()


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    iterations=st.integers(1, 10**7),
    left=st.floats(1e-9, 1e7),
    seq=st.floats(1e-6, 1e7),
    limit=st.floats(0.0, 1e7),
)
def test_option_job_columns_give_the_numpy_bits(data, iterations, left, seq, limit):
    options = data.draw(st.integers(1, 48))
    fit = np.array(sorted(data.draw(st.sets(st.integers(0, options - 1), min_size=1))), dtype=np.int64)
    degree = np.array(data.draw(st.lists(st.integers(1, 64), min_size=len(fit), max_size=len(fit))), dtype=float)
    iteration = np.array(data.draw(st.lists(st.floats(1e-6, 10.0), min_size=len(fit), max_size=len(fit))), dtype=float)
    iteration[0] = limit / iterations  # a JCT exactly at the limit: meets it
    rows = np.random.default_rng(options).random((options, OPTION_FEATURES)).astype(np.float32)
    expected = reference_job_columns(rows, fit, degree, iteration, iterations, limit, left, seq)
    option_job_columns(rows, fit, degree, iteration, float(iterations), limit, left, seq)
    assert rows.tobytes() == expected.tobytes()
