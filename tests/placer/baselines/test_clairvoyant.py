"""The clairvoyant bound: a hand-solved stream and the bound against an online policy."""

import numpy as np
import pytest

pytest.importorskip("scipy")

from placer.baselines.clairvoyant import clairvoyant  # noqa: E402
from placer.baselines.registry import make_heuristic  # noqa: E402
from placer.cluster.topology import load_cluster  # noqa: E402
from placer.cost import CostModel  # noqa: E402
from placer.graphs.catalog import resolve_graph  # noqa: E402
from placer.sim.rollout import simulate  # noqa: E402
from placer.workloads.generator import BetaDistribution, JobSpec, Workload  # noqa: E402
from tests.placer.toys import chain, toy_cluster  # noqa: E402


def test_two_devices_three_overlapping_single_device_jobs_block_one():
    # chain: 6 s per iteration on one device; arrivals 0, 1, 2 overlap; deadline = sequential
    cost = CostModel(toy_cluster(servers=2, per_server=1))
    jobs = [JobSpec(float(t), chain(), 1.0, 1) for t in (0, 1, 2)]
    result = clairvoyant(cost, jobs, max_degree=1, time_limit_s=10)
    assert (result.blocking_rate, result.lower_bound, result.optimal, result.degrees) == (
        pytest.approx(1 / 3),
        pytest.approx(1 / 3),
        True,
        {1: 2},
    )


def test_a_job_that_waits_for_a_free_device_fits_after_the_first_finishes():
    cost = CostModel(toy_cluster(servers=1, per_server=1))
    jobs = [JobSpec(0.0, chain(), 1.0, 1), JobSpec(6.0, chain(), 1.0, 1)]  # the second arrives as the first ends
    assert clairvoyant(cost, jobs, max_degree=1, time_limit_s=10).blocking_rate == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_online_policy_blocks_fewer_than_the_bound_on_pacml(seed):
    cost = CostModel(load_cluster("pacml"))
    graphs = [resolve_graph(g) for g in ("alexnet", "resnet18", "gnmt")]
    workload = Workload(graphs, BetaDistribution("B"), 0.9, 32, 60, "poisson", None, cost.sequential_iteration_s)
    bound = clairvoyant(cost, workload.jobs(np.random.default_rng(seed)), time_limit_s=20)
    lean = make_heuristic("lean")
    lean.reset(np.random.default_rng(seed))
    online = simulate(cost, workload.jobs(np.random.default_rng(seed)), lean.decide).metrics.blocking_rate
    assert bound.lower_bound <= bound.blocking_rate <= online + 1e-9
