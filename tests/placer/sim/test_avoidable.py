"""What a policy can change: avoidable jobs, their blocking rate, slowdown and device-hours, worked out by hand."""

import numpy as np
import pytest

import placer
from placer.baselines.registry import make_heuristic
from placer.cluster.placement import PLACEMENT_RULES, FreeDevices
from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.cost import CostModel
from placer.sim.fastest import fastest_iteration_s, idle_iteration_s
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.sim.types import BlockReason
from placer.workloads.generator import BetaDistribution, JobSpec, Workload
from tests.placer.toys import chain, toy_cluster

# Two devices on one server; chain: sequential 6 s, degree 2 takes 3.5 s (the fastest on the idle cluster).


def _specs(*arrivals_and_betas):
    return [JobSpec(t, chain(), beta, 1) for t, beta in arrivals_and_betas]


def test_loss_system_counts_only_the_jobs_a_policy_could_accept():
    # t=1 runs on both devices until 4.5; t=2 finds none (avoidable: 3.5 <= 6); t=3 has 0.5 x 6 = 3 s < 3.5 s (unavoidable); t=5 runs.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    run = simulate(cost, _specs((1.0, 1.0), (2.0, 1.0), (3.0, 0.5), (5.0, 1.0)), make_heuristic("para_max").decide)
    assert [r.avoidable for r in run.records] == [True, True, False, True]
    assert [r.fastest_jct_s for r in run.records] == [3.5] * 4
    m = run.metrics
    assert m.blocking_rate == 0.5
    assert (m.avoidable_jobs, m.avoidable_blocking_rate, m.unavoidable_share) == (3, pytest.approx(1 / 3), 0.25)
    assert m.mean_slowdown == 1.0  # both accepted jobs ran at once on the fastest placement
    assert m.device_hours_per_job == pytest.approx(2 * 3.5 / 3600)


def test_queue_wait_enters_the_slowdown_and_hopeless_jobs_are_unavoidable():
    # edf-bf: t=2 waits until 4.5 (its latest start: 2 + 6 - 3.5) and runs 3.5 s; t=3 (beta 0.5) leaves at arrival.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    jobs = _specs((1.0, 1.0), (2.0, 1.0), (3.0, 0.5))
    run = simulate(cost, jobs, make_heuristic("para_max").decide, queue=QueueConfig.parse("edf-bf"))
    late = run.records[1]
    assert (late.job_id, late.reason, late.avoidable) == (2, BlockReason.DEADLINE, False)
    m = run.metrics
    assert (m.avoidable_jobs, m.avoidable_blocking_rate, m.unavoidable_share) == (2, 0.0, pytest.approx(1 / 3))
    assert m.mean_slowdown == pytest.approx((1 + (2.5 + 3.5) / 3.5) / 2)
    assert m.blocked_by_reason == {"deadline": 1}


@pytest.mark.parametrize("queue", ["none", "edf-bf"])
def test_avoidability_is_the_same_for_every_policy(queue):
    cost = CostModel(toy_cluster(1, 4), strategy="sipml")
    jobs = list(Workload([chain()], BetaDistribution("uniform:0.3:1.0"), 1.3, 4, 60).jobs(np.random.default_rng(3)))
    runs = [simulate(cost, jobs, make_heuristic(p).decide, queue=QueueConfig.parse(queue)) for p in ("para_max", "para_min", "lean")]
    flags = [{r.job_id: r.avoidable for r in run.records} for run in runs]
    assert flags[0] == flags[1] == flags[2]
    assert 0 < sum(flags[0].values()) < len(jobs)  # both kinds occur, so the test can fail
    for run in runs:
        blocked = sum(not r.avoidable or r.outcome.value == "blocked" for r in run.records)  # every unavoidable job is blocked
        assert run.metrics.blocking_rate == pytest.approx(blocked / len(jobs))


def _slow_then_fast() -> Cluster:
    """Server 0: two devices at half speed; server 1: two at full speed. Every rule on the idle cluster starts at server 0."""
    spec = {
        "name": "slow-then-fast",
        "device_types": {"slow": {"memory_bytes": 80e9, "speed": 0.5}, "fast": {"memory_bytes": 80e9, "speed": 1.0}},
        "servers": [{"count": 1, "devices_per_server": 2, "device_type": t} for t in ("slow", "fast")],
        "links": {"intra_server": {"bandwidth_Bps": 8e9, "latency_s": 0.0}, "inter_server": {"bandwidth_Bps": 4e9, "latency_s": 0.0}},
    }
    return Cluster(parse_cluster_spec(spec))


def test_the_fastest_on_the_idle_cluster_is_one_definition_and_reaches_a_fast_type_behind_slow_servers():
    cluster = _slow_then_fast()
    cost = CostModel(cluster, strategy="sipml")
    idle = FreeDevices(cluster, np.ones(cluster.num_devices, dtype=bool))
    predictions = [cost.predict(chain(), rule(idle, d)) for d in range(1, 5) for rule in PLACEMENT_RULES.values()]
    by_rules = min(p.iteration_s for p in predictions if p.fits)
    assert by_rules == 4.75  # all four devices: the rules on the whole idle cluster never give the fast server alone
    assert fastest_iteration_s(cost, chain()) == 3.5 == cost.predict(chain(), (2, 3)).iteration_s  # its two devices
    for degree, seconds in idle_iteration_s(cost, chain()).items():  # what placer.predict answers for a degree
        assert placer.predict(chain(), cluster, degree, strategy="sipml").iteration_s == seconds


@pytest.mark.parametrize("queue", ["none", "edf-bf"])
def test_a_job_only_the_fast_type_serves_in_time_is_avoidable_and_served_while_the_slow_server_is_busy(queue):
    # job 0 takes the slow server (fixed:2, first fit) for 35 s; job 1 (deadline 4 s) gets the fast one and runs 3.5 s
    cost = CostModel(_slow_then_fast(), strategy="sipml")
    jobs = [JobSpec(0.0, chain(), 10.0, 10), JobSpec(1.0, chain(), 4.0 / cost.sequential_jct_s(chain(), 1), 1)]
    run = simulate(cost, jobs, make_heuristic("fixed:2").decide, queue=QueueConfig.parse(queue))
    late = run.records[1]
    assert (late.outcome.value, late.devices, late.fastest_jct_s, late.avoidable) == ("accepted", (2, 3), 3.5, True)
