"""``lean``'s and ``switch``'s choices read from the option table's arrays (``OptionTable.thriftiest``, ``feasible``) are
the ones the list of built options gives, at every decision point of real streams on a uniform and a mixed cluster."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.baselines.heuristics import LEAN_TIE, Lean, Switch
from placer.cluster.placement import PLACEMENT_RULES
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.graphs.catalog import resolve_graphs
from placer.sim.options import degrees_for, options
from placer.sim.simulator import Simulator
from placer.sim.types import Reject
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload

GRAPHS = resolve_graphs(["alexnet", "gnmt", "resnet50", "vgg16"])


def _listed_thrifty(lean: Lean, job, view):
    """The former choice: every option built, filtered and compared as objects."""
    degrees = degrees_for(view, min(lean.max_degree, lean.cap or lean.max_degree))
    feasible = [o for o in options(job, view, degrees=degrees, rules=lean.rules_in_preference(), distinct=True) if o.feasible]
    if not feasible:
        return None
    least = min(o.device_seconds for o in feasible)
    thrifty = [o for o in feasible if o.device_seconds <= least * (1 + LEAN_TIE)]
    return min(thrifty, key=lambda o: (o.degree, o.jct_s, o.device_seconds))


def _listed_wide(switch: Switch, job, view):
    table = options(job, view, degrees=degrees_for(view, switch.max_degree), rules=(switch.rule,))
    return next((o for o in reversed(table) if o.feasible), None)


def _decision_points(cluster: str, load: float, beta: str, seed: int, jobs: int = 60):
    """(job, view) at each decision of a stream, the cluster filled by ``lean+best_fit``'s own choices."""
    cost = CostModel(load_cluster(cluster))
    workload = Workload(
        GRAPHS, BetaDistribution(beta), load, cost.cluster.num_devices, jobs, "poisson", None, cost.sequential_iteration_s,
        SizeDistribution("loguniform:0.1:10"),
    )  # fmt: skip
    sim = Simulator(cost, list(workload.jobs(np.random.default_rng(seed))))
    driver = Lean(rule="best_fit")
    while (job := sim.next_job()) is not None:
        view = sim.view()
        yield job, view
        sim.decide(driver.decide(job, view))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=st.sampled_from(["dgx8x8", "mixed"]),
    load=st.sampled_from([0.7, 1.3]),
    beta=st.sampled_from(["A", "B", "C", "D"]),
    seed=st.integers(0, 10_000),
)
def test_array_choices_are_the_built_options_choices(cluster, load, beta, seed):
    leans = [Lean(rule=rule) for rule in PLACEMENT_RULES] + [Lean(cap=4)]
    switch = Switch(rule="best_fit")
    chosen = 0
    for job, view in _decision_points(cluster, load, beta, seed):
        for lean in leans:
            assert lean.thrifty(job, view) == _listed_thrifty(lean, job, view)
        wide = _listed_wide(switch, job, view)
        quiet = not (len(view.waiting) > 1 or view.num_free <= switch.quiet_free * view.cluster.num_devices)
        if quiet:
            assert switch.decide(job, view) == (wide.place() if wide is not None else Reject())
        chosen += leans[0].thrifty(job, view) is not None
    assert chosen > 0  # the streams placed jobs: the comparison compared choices, not Nones


@pytest.mark.parametrize("cluster", ["dgx8x8", "mixed"])
def test_thriftiest_is_none_exactly_when_nothing_is_feasible(cluster):
    for job, view in _decision_points(cluster, 1.3, "A", 1, jobs=40):
        lean = Lean()
        assert (lean.thrifty(job, view) is None) == (_listed_thrifty(lean, job, view) is None)
