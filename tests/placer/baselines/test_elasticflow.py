"""ElasticFlow (placer.baselines.elasticflow) and buddy blocks, on cases worked out by hand.

The toy: one server of two devices, the ``chain`` graph under the sipml model (6 s per iteration on one device, 3.5 s on
two), no parameters, so a resize pauses a job exactly the cluster's ``restart_s`` (4 s).
"""

import numpy as np
import pytest

from placer.baselines.policy import run_policy
from placer.baselines.registry import make_heuristic
from placer.cluster.buddy import buddy_blocks
from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.sim.types import Outcome
from placer.workloads.generator import JobSpec
from tests.placer.toys import chain, toy_cluster

PAUSE = 4.0


def _cost() -> CostModel:
    spec = toy_cluster(1, 2).spec.model_dump()
    return CostModel(Cluster(parse_cluster_spec({**spec, "name": "elastic-toy", "resize": {"restart_s": PAUSE}})), strategy="sipml")


def _run(policy: str, jobs: list[JobSpec]):
    return run_policy(make_heuristic(policy), _cost(), jobs, QueueConfig(), np.random.default_rng(0))


def test_elasticflow_admits_a_job_the_fixed_policies_reject():
    # job0 (10 iterations, deadline 60 s) fits on one device; job1 (2 iterations at t=40, deadline 0.6 x 12 = 7.2 s)
    # needs both (7 s). para_min and lean run job0 on one device to t=60, so job1 finds one free and is rejected;
    # ElasticFlow hands job0 the idle second device (done at t=35), so at t=40 both are free.
    jobs = [JobSpec(0.0, chain(), 1.0, 10), JobSpec(40.0, chain(), 0.6, 2)]
    for fixed in ("para_min", "lean"):
        run = _run(fixed, jobs)
        assert [r.outcome for r in run.records] == [Outcome.ACCEPTED, Outcome.BLOCKED]
        assert run.records[0].devices == (0,)
    run = _run("elasticflow", jobs)
    assert [r.outcome for r in run.records] == [Outcome.ACCEPTED, Outcome.ACCEPTED]
    assert [(r.devices, r.finish_s) for r in run.records] == [((0, 1), 35.0), ((0, 1), 47.0)]
    assert run.metrics.resizes == 0


def test_elasticflow_takes_devices_back_to_admit_and_hands_them_out_again():
    # job0 holds both devices from t=0; job1 (1 iteration, deadline 6 s) arrives at t=7: job0's minimum share is one
    # device (4 s pause + 8 x 6 s = 52 s <= 53 s left), so it halves to device 0 and job1 takes device 1 (done t=13);
    # then job0 (2 + 2/6 iterations done, paused to t=11) grows back: 13 + 4 + (8 - 1/3) x 3.5.
    run = _run("elasticflow", [JobSpec(0.0, chain(), 1.0, 10), JobSpec(7.0, chain(), 1.0, 1)])
    r0, r1 = run.records
    assert (r1.outcome, r1.devices, r1.finish_s) == (Outcome.ACCEPTED, (1,), 13.0)
    assert (r0.devices, r0.resizes, r0.resize_pause_s) == ((0, 1), 2, 2 * PAUSE)
    assert r0.finish_s == pytest.approx(13 + PAUSE + (8 - 1 / 3) * 3.5)
    assert r0.finish_s <= r0.arrival_s + r0.deadline_s
    assert (run.metrics.accepted, run.metrics.resizes, run.metrics.resize_pause_s) == (2, 2, 2 * PAUSE)


def test_elasticflow_declines_what_no_share_can_serve():
    # job1 needs both devices (7 s of 7.2 s) while job0, at t=1, cannot halve and keep its deadline (1 + 4 + 9.71 x 6 > 60)
    run = _run("elasticflow", [JobSpec(0.0, chain(), 1.0, 10), JobSpec(1.0, chain(), 0.6, 2)])
    assert [r.outcome for r in run.records] == [Outcome.ACCEPTED, Outcome.BLOCKED]
    assert run.records[0].resizes == 0


def test_buddy_blocks_are_aligned_inside_servers_and_whole_servers_beyond():
    cluster = toy_cluster(4, 8)
    assert buddy_blocks(cluster, 4)[:3] == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11))
    assert len(buddy_blocks(cluster, 1)) == 32 and len(buddy_blocks(cluster, 8)) == 4
    assert buddy_blocks(cluster, 16) == (tuple(range(16)), tuple(range(16, 32)))
    assert buddy_blocks(cluster, 64) == () and buddy_blocks(cluster, 3) == ()


def test_elasticflow_is_a_policy_name():
    policy = make_heuristic("elasticflow")
    assert policy.name == "elasticflow" and policy.elastic
    assert not make_heuristic("para_min").elastic
    with pytest.raises(PolicyError, match="buddy"):
        make_heuristic("elasticflow+best_fit")


def test_elasticflow_in_a_fixed_simulator_moves_nothing_and_places_on_free_blocks():
    from placer.sim.rollout import simulate

    jobs = [JobSpec(0.0, chain(), 1.0, 10), JobSpec(1.0, chain(), 1.0, 1), JobSpec(40.0, chain(), 1.0, 1)]
    run = simulate(_cost(), jobs, make_heuristic("elasticflow").decide)  # no rebalance: a fixed simulator
    assert [(r.outcome, r.devices) for r in run.records] == [
        (Outcome.ACCEPTED, (0, 1)),
        (Outcome.BLOCKED, ()),  # job0 cannot be shrunk here
        (Outcome.ACCEPTED, (0, 1)),
    ]
