"""The option table and its shortcut: whether any option is feasible, from one memoised lookup."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.cluster.placement import PLACEMENT_RULES
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.graphs.catalog import resolve_graph
from placer.sim.options import OptionTable, any_feasible, options
from placer.sim.state import ClusterView
from placer.sim.types import Job
from tests.placer.toys import chain, toy_cluster

COSTS = {name: CostModel(load_cluster(name)) for name in ("dgx8x8", "mixed")}
GRAPHS = {"chain": chain(), "vgg16": resolve_graph("vgg16")}  # vgg16 does not fit on one device of every kind


@settings(max_examples=80, deadline=None)
@given(
    cluster=st.sampled_from(sorted(COSTS)),
    graph_name=st.sampled_from(sorted(GRAPHS)),
    free_bits=st.integers(min_value=0, max_value=2**64 - 1),
    slack=st.floats(min_value=0.98, max_value=1.02),
    max_degree=st.integers(min_value=1, max_value=16),
    rules=st.sets(st.sampled_from(sorted(PLACEMENT_RULES)), min_size=1),
)
def test_any_feasible_is_whether_the_table_holds_a_feasible_option(cluster, graph_name, free_bits, slack, max_degree, rules):
    """The time left is within 2 % of the table's fastest option: the answer flips across the samples."""
    cost, graph = COSTS[cluster], GRAPHS[graph_name]
    n = cost.cluster.num_devices
    free = np.array([(free_bits >> d) & 1 == 1 for d in range(n)])
    view = ClusterView(cost, 0.0, free, np.zeros(n), 0)
    degrees, rules = range(1, min(max_degree, n) + 1), tuple(sorted(rules))
    seq = cost.sequential_jct_s(graph, 3)
    roomy = options(Job(0, graph, 0.0, 1e9, 3, seq), view, degrees=degrees, rules=rules)
    fastest = min((o.jct_s for o in roomy if o.jct_s is not None), default=seq)
    job = Job(0, graph, 0.0, slack * fastest / seq, 3, seq)
    expected = any(o.feasible for o in options(job, view, degrees=degrees, rules=rules))
    assert any_feasible(job, view, degrees=degrees, rules=rules) is expected
    assert any_feasible(job, view, degrees=degrees, rules=rules) is expected  # the memoised answer too


def test_any_feasible_on_a_hand_built_case():
    """chain() takes its sequential time on the one free device: in time at arrival, not after waiting half its deadline."""
    cost = CostModel(toy_cluster(1, 2))
    free = np.array([True, False])
    job = Job(0, chain(), 0.0, 1.0, 1, cost.sequential_jct_s(chain(), 1))
    seq = job.sequential_jct_s
    assert any_feasible(job, ClusterView(cost, 0.0, free, np.zeros(2), 0), degrees=range(1, 3), rules=("first_fit",))
    late = ClusterView(cost, seq * 0.5, free, np.zeros(2), 0)  # waited half the deadline: one device is too slow
    assert not any_feasible(job, late, degrees=range(1, 3), rules=("first_fit",))
    none_free = ClusterView(cost, 0.0, np.zeros(2, dtype=bool), np.zeros(2), 0)
    assert not any_feasible(job, none_free, degrees=range(1, 3), rules=("first_fit",))


@settings(max_examples=40, deadline=None)
@given(cluster=st.sampled_from(sorted(COSTS)), free_bits=st.integers(min_value=0, max_value=2**64 - 1), padded=st.integers(0, 80))
def test_an_option_s_devices_read_without_building_it_are_its_devices(cluster, free_bits, padded):
    cost = COSTS[cluster]
    n = cost.cluster.num_devices
    free = np.array([(free_bits >> d) & 1 == 1 for d in range(n)])
    view = ClusterView(cost, 0.0, free, np.zeros(n), 0)
    job = Job(0, chain(), 0.0, 1.0, 3, cost.sequential_jct_s(chain(), 3))
    table = OptionTable(job, view, range(1, 17), tuple(PLACEMENT_RULES), max_degree=16 + padded)
    read = [table.devices_of(i) for i in range(len(table))]  # first, while no option is built
    assert read == [option.devices for option in table]
