import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from placer.cluster.placement import PLACEMENT_RULES, FreeDevices
from placer.cluster.topology import load_cluster
from placer.cost import CostModel, PlacementShape, sipml
from tests.placer.toys import chain, op, toy_cluster, toy_graph


def test_chain_on_one_server_is_compute_halved_plus_exposed_allgather():
    # degree 2 on one server: a takes 1 s, the 8e9-byte all-gather 8e9 * (1 - 1/2) / 8e9 = 0.5 s, b 2 s.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    assert cost.iteration_s(chain(), cost.shape([0, 1])) == pytest.approx(3.5, abs=1e-12)


def test_chain_across_servers_pays_latency_and_network_bandwidth():
    # two single-device servers, 4e9 B/s and 0.1 s latency: 0.1 + 8e9 * (1 - 1/2) / 4e9 = 1.1 s.
    cost = CostModel(toy_cluster(2, 1, inter=(4e9, 0.1)), strategy="sipml")
    assert cost.shape([0, 1])[:5] == PlacementShape(degree=2, servers=2, min_per_server=1, max_per_server=1, speed=1.0)[:5]
    assert cost.iteration_s(chain(), cost.shape([0, 1])) == pytest.approx(1.0 + 1.1 + 2.0, abs=1e-12)


def test_degree_one_is_sequential():
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    assert cost.jct_s(chain(), [1], iterations=10) == pytest.approx(60.0)
    assert cost.sequential_jct_s(chain(), iterations=10) == pytest.approx(60.0)


def test_communication_overlaps_with_independent_work():
    # a (2) -> c (2) with a 16e9-byte edge, b (2) independent. Degree 2 on one server:
    # a 0-1, b 1-2 while the 1 s all-gather runs, c arrives at 2 and runs 2-3.
    graph = toy_graph({"a": op(2.0), "b": op(2.0), "c": op(2.0)}, {("a", "c"): 16e9})
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    assert cost.iteration_s(graph, cost.shape([0, 1])) == pytest.approx(3.0)


def test_diamond_schedule_follows_critical_path_priority():
    # a(2) -> b(4) -> d(2), a -> c(2) -> d, only a->c carries 8e9 bytes. Degree 2, one server:
    # a 0-1; b (longest path) 1-3; c (arrived 1.5) 3-4; d 4-5.
    graph = toy_graph(
        {"a": op(2), "b": op(4), "c": op(2), "d": op(2)}, {("a", "b"): 0.0, ("a", "c"): 8e9, ("b", "d"): 0.0, ("c", "d"): 0.0}
    )
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    assert cost.iteration_s(graph, cost.shape([0, 1])) == pytest.approx(5.0)


def test_two_level_allgather_formula_on_a_multi_gpu_cluster():
    # 3 servers x 4 GPUs, placement 4 + 2 on two servers (d = 6): k = 2, m_min = 2, m_max = 4.
    # T(S) = 1 * 1e-3 + S (1 - 2/6) / 1e9  +  3 * 1e-6 + S (1 - 1/6) / 1e10
    cost = CostModel(toy_cluster(3, 4, intra=(1e10, 1e-6), inter=(1e9, 1e-3)), strategy="sipml")
    shape = cost.shape([0, 1, 2, 3, 4, 5])
    assert (shape.servers, shape.min_per_server, shape.max_per_server) == (2, 2, 4)
    expected = 1e-3 + 6e9 * (4 / 6) / 1e9 + 3e-6 + 6e9 * (5 / 6) / 1e10
    assert sipml.allgather_s(6e9, shape, cost.cluster.spec.links) == pytest.approx(expected, rel=1e-12)


def test_memory_is_split_evenly_and_counts_optimizer_state():
    # params 1e9 bytes x 4 (weights, grads, Adam m and v) + 2e9 activations = 6e9 bytes.
    graph = toy_graph({"a": op(1.0, param_bytes=1e9, activation_bytes=2e9)}, {})
    cost = CostModel(toy_cluster(1, 2, memory=4e9), strategy="sipml")
    assert cost.memory_per_device(graph, 2) == pytest.approx(3e9)
    assert not cost.fits(graph, [0])
    assert cost.fits(graph, [0, 1])
    assert cost.min_degree_to_fit(graph, 4e9) == 2


def test_slowest_device_sets_the_pace():
    cost = CostModel(toy_cluster(1, 2, speed=0.5), strategy="sipml")
    assert cost.jct_s(chain(), [0]) == pytest.approx(12.0)


def test_local_edges_never_communicate():
    from placer.graphs.pipedream import parse_pipedream

    text = (
        "node1 -- Input -- forward_compute_time=2.000, backward_compute_time=0.000, activation_size=8e9, parameter_size=0\n"
        "node2 -- Linear -- forward_compute_time=4.000, backward_compute_time=6.000, activation_size=0, parameter_size=0\n"
        "\tnode1 -- node2\n"
    )
    graph = parse_pipedream(text, name="t", iterations=1)
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    # fw1 1 ms, fw2 (after the 0.5 s all-gather) 2 ms, bw2 3 ms (local edge: no wait), bw1 after
    # bw2 -> bw1 carries 8e9 bytes: another 0.5 s, then bw1 0 ms.
    assert cost.iteration_s(graph, cost.shape([0, 1])) == pytest.approx(0.001 + 0.5 + 0.002 + 0.003 + 0.5)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 12),
    data=st.data(),
    degree=st.integers(1, 8),
)
def test_iteration_time_lies_between_lower_bounds_and_a_serial_bound(n, data, degree):
    times = data.draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n))
    assume(any(t > 0 for t in times))  # a graph whose ops all take 0 s is invalid
    sizes = data.draw(st.lists(st.floats(0.0, 1e10), min_size=n, max_size=n))
    edges = {(f"o{i}", f"o{j}"): sizes[j] for j in range(1, n) for i in data.draw(st.sets(st.integers(0, j - 1), max_size=2))}
    graph = toy_graph({f"o{i}": op(t) for i, t in enumerate(times)}, edges)
    cost = CostModel(toy_cluster(2, 4, intra=(1e10, 1e-5), inter=(1e9, 1e-4)), strategy="sipml")
    devices = list(range(degree))
    t = cost.iteration_s(graph, cost.shape(devices))
    compute = sum(times) / degree
    comm = sum(sipml.allgather_s(s, cost.shape(devices), cost.cluster.spec.links) for s in edges.values())
    assert t >= compute - 1e-9  # the devices must run every shard
    assert t <= compute + comm + 1e-9  # never worse than no overlap at all
    assert math.isfinite(t)


def test_cache_returns_identical_values():
    cost = CostModel(toy_cluster(2, 4), strategy="sipml")
    first = cost.iteration_s(chain(), cost.shape([0, 1, 4]))
    assert cost.iteration_s(chain(), cost.shape(np.array([4, 0, 1]))) == first


def test_equal_shapes_are_one_object_and_a_table_lists_each_once():
    """Two servers' first pairs have one shape object (the cost model interns them), so a placement table's distinct
    shapes, which best_iteration_s predicts, are found by identity: on two idle 4-device servers, first_fit and
    best_fit at degrees 1-4 fill one server (4 shapes), spread crosses both (at degrees 2-4: 3 more)."""
    cost = CostModel(toy_cluster(2, 4), strategy="sipml")
    assert cost.shape([0, 1]) is cost.shape([4, 5])
    assert cost.shape([0, 4]) is not cost.shape([0, 1])
    table = cost.placement_table(np.ones(8, dtype=bool), range(1, 5), ("first_fit", "best_fit", "spread"))
    assert len(table) == 12 and len(table.shapes) == 7
    assert sorted((s.degree, s.servers) for s in table.shapes) == [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2)]


def test_uncached_model_gives_the_same_answer_and_stores_nothing():
    cached, uncached = CostModel(toy_cluster(2, 4), strategy="sipml"), CostModel(toy_cluster(2, 4), strategy="sipml", cache=False)
    for devices in ([0, 1], [0, 4], [0, 1, 2, 5]):
        assert uncached.jct_s(chain(), devices) == cached.jct_s(chain(), devices)
    assert not uncached._predictions
    keys = [(chain().key, cached.shape(devices), "sipml") for devices in ([0, 1], [0, 4], [0, 1, 2, 5])]
    assert all(cached._predictions.get(key) is not None for key in keys)


def test_models_of_one_pricing_key_share_their_predictions():
    first, second = CostModel(toy_cluster(2, 4), strategy="sipml"), CostModel(toy_cluster(2, 4), strategy="sipml")
    assert first._predictions is second._predictions  # what one prices, the other finds
    assert CostModel(toy_cluster(2, 4), strategy="auto")._predictions is not first._predictions  # another setting
    assert CostModel(toy_cluster(2, 3), strategy="sipml")._predictions is not first._predictions  # another cluster
    assert CostModel(toy_cluster(2, 4), strategy="sipml", cache=False)._predictions is not first._predictions
    retuned = first.retuned(first.fabric, first.overheads, {})
    assert retuned._predictions is not first._predictions  # calibration's twins price apart


def test_models_of_one_pricing_key_share_their_placement_tables():
    free = np.array([True, True, False, True, True, True, True, False])
    first, second = CostModel(toy_cluster(2, 4), strategy="sipml"), CostModel(toy_cluster(2, 4), strategy="sipml")
    table = first.placement_table(free, (1, 2, 3), ("first_fit", "spread"))
    assert second.placement_table(free, (1, 2, 3), ("first_fit", "spread")) is table  # built once, found by the other
    assert first.table_predictions(chain(), table) is second.table_predictions(chain(), table)  # its predictions too
    for apart in (
        CostModel(toy_cluster(2, 4), strategy="auto"),  # another setting: other predictions in its tables
        CostModel(toy_cluster(2, 3), strategy="sipml"),  # another cluster
        CostModel(toy_cluster(2, 4), strategy="sipml", cache=False),
        CostModel(toy_cluster(2, 4), strategy="sipml", max_graphs=7),  # tables bounded otherwise
        first.retuned(first.fabric, first.overheads, {}),  # calibration's twins price apart
    ):
        assert apart._placed is not first._placed


def test_a_rebased_model_predicts_as_a_new_one_and_adopts_prices_made_elsewhere():
    """A refitted cluster's model (the service's refit): the old model's graph-side caches, none of its predictions."""
    graph = toy_graph({"a": op(1.0, param_bytes=1e9), "b": op(2.0, param_bytes=1e9)}, {("a", "b"): 1e3})
    slow = toy_cluster(2, 2, inter=(4e8, 0.1))
    old = CostModel(toy_cluster(2, 2))
    before = old.predict(graph, [0, 2]).iteration_s
    rebased = old.rebased(slow)
    assert rebased.predict(graph, [0, 2]).iteration_s == CostModel(slow).predict(graph, [0, 2]).iteration_s > before
    assert rebased.profile(graph, None, 1.0) is old.profile(graph, None, 1.0)  # shared, not rebuilt
    assert old.predict(graph, [0, 2]).iteration_s == before  # the old model is untouched

    elsewhere = CostModel(slow)
    elsewhere.sequential_jct_s(graph)
    elsewhere.predict(graph, [0, 1, 2, 3])
    taker = CostModel(toy_cluster(2, 2)).rebased(slow)
    assert taker.adopt(elsewhere.priced())
    assert dict(taker._predictions.items()) == dict(elsewhere._predictions.items())
    assert taker.sequential_iteration_s(graph) == elsewhere.sequential_iteration_s(graph)
    assert not CostModel(slow, strategy="dp").adopt(elsewhere.priced())  # priced under other settings: ignored


def test_masks_with_the_same_free_counts_share_one_table_and_each_gets_its_own_devices():
    """The placement table is kept per free count per server: two masks with the same counts share it, and each reads
    its own devices off it, those the rules pick, with the shape of those devices."""
    cluster = load_cluster("dgx8x8")
    cost, fresh, rng = CostModel(cluster), CostModel(cluster), np.random.default_rng(1)
    degrees, rules = range(1, 17), tuple(PLACEMENT_RULES)
    a, b = np.zeros(64, dtype=bool), np.zeros(64, dtype=bool)
    a[[0, 1, 2, *range(8, 16), 40]] = True
    b[[5, 6, 7, *range(16, 24), 63]] = True
    assert cost.placement_table(a, degrees, rules) is cost.placement_table(b, degrees, rules)
    for free in [a, b, *(rng.random(64) < rng.uniform(0, 1) for _ in range(100))]:
        entries = cost.placements(free, degrees, rules)
        for i, (degree, rule, devices, shape, repeat) in enumerate(entries):
            assert devices == PLACEMENT_RULES[rule](FreeDevices(cluster, free), degree)
            assert shape == (fresh.shape(devices) if devices is not None else None)
            earlier = [e.devices for e in entries[i - rules.index(rule) : i]]
            assert repeat == (devices is not None and devices in earlier)
