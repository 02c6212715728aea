"""Elastic lean (placer.baselines.elastic_lean) on cases worked out by hand.

The toy: two servers of two devices, the ``chain`` graph under the sipml model: 6 s per iteration on one device, 3.5 s
on two of one server, 4 s on two of two servers or on three, 3.25 s on four; no parameters, so a resize pauses a job
exactly the cluster's ``restart_s`` (4 s). Lean starts every job on one device when that meets its deadline (the least
device-time).
"""

import numpy as np
import pytest

from placer.baselines.policy import run_policy
from placer.baselines.registry import make_heuristic
from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.sim.types import Outcome
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster

PAUSE = 4.0


def _cost() -> CostModel:
    spec = toy_cluster(2, 2).spec.model_dump()
    return CostModel(Cluster(parse_cluster_spec({**spec, "name": "elastic-toy2", "resize": {"restart_s": PAUSE}})), strategy="sipml")


def _job(arrival: float, beta: float, iterations: int) -> JobSpec:
    return JobSpec(arrival, chain(), beta, iterations)


def _run(policy: str, jobs: list[JobSpec], queue: str = "none", seed: int = 0):
    return run_policy(make_heuristic(policy), _cost(), jobs, QueueConfig.parse(queue), np.random.default_rng(seed))


def test_the_toy_costs_what_the_docstring_says():
    cost = _cost()
    times = {devices: cost.predict(chain(), devices).iteration_s for devices in ((0,), (0, 1), (1, 2), (0, 1, 2), (0, 1, 2, 3))}
    assert times == {(0,): 6.0, (0, 1): 3.5, (1, 2): 4.0, (0, 1, 2): 4.0, (0, 1, 2, 3): 3.25}


def test_a_job_grows_into_idle_devices_gives_one_back_to_admit_and_grows_again():
    # job0 (10 iterations, deadline 60 s) and job1 (1 iteration) start on devices 0 and 1. At t=6 job1 is done and job0
    # (1 iteration done, 54 s left as it is) grows: 2 devices of one server save 54 - (4 + 9 x 3.5) = 18.5 s, the most
    # per device; from there 4 devices save 35.5 - (4 + 9 x 3.25) = 2.25 s more for 2: it takes all four (done 39.25).
    # job2 (1 iteration, deadline 6 s) arrives at t=10 to a full cluster: job0 (paused to t=10) may shrink to 2 devices
    # (10 + 4 + 9 x 3.5 = 45.5 <= 60; one device, 58 s, would miss), but giving back one device (3 devices: 10 + 4 + 9 x 4
    # = 50) is enough: job2 runs on device 3 to t=16. Then job0 (1.5 done) grows back: 16 + 4 + 8.5 x 3.25 = 47.625.
    run = _run("elastic_lean", [_job(0.0, 1.0, 10), _job(0.0, 1.0, 1), _job(10.0, 1.0, 1)])
    r0, r1, r2 = run.records
    assert [r.outcome for r in run.records] == [Outcome.ACCEPTED] * 3
    assert (r1.devices, r1.finish_s) == ((1,), 6.0)
    assert (r2.devices, r2.finish_s, r2.resizes) == ((3,), 16.0, 0)
    assert (r0.devices, r0.resizes, r0.resize_pause_s) == ((0,), 3, 3 * PAUSE)
    assert r0.finish_s == pytest.approx(16 + PAUSE + 8.5 * 3.25)
    assert r0.device_seconds == pytest.approx(1 * 6 + 4 * 4 + 3 * 6 + 4 * (r0.finish_s - 16))
    lean = _run("lean", [_job(0.0, 1.0, 10), _job(0.0, 1.0, 1), _job(10.0, 1.0, 1)])
    assert [(r.devices, r.finish_s) for r in lean.records] == [((0,), 60.0), ((1,), 6.0), ((1,), 16.0)]


def test_a_grown_job_shrinks_to_the_degree_that_meets_its_deadline_and_no_further():
    # job2 (2 iterations, deadline 0.6 x 12 = 7.2 s) needs two devices of one server (7 s). job0, grown to four at t=6,
    # gives back server 1: 10 + 4 + 9 x 3.5 = 45.5, and growing again at t=17 would not pay (30.46 s against 28.5 s left).
    run = _run("elastic_lean", [_job(0.0, 1.0, 10), _job(0.0, 1.0, 1), _job(10.0, 0.6, 2)])
    r0, _, r2 = run.records
    assert (r2.outcome, r2.devices, r2.finish_s) == (Outcome.ACCEPTED, (2, 3), 17.0)
    assert (r0.resizes, r0.finish_s) == (2, 45.5)
    # job2 (deadline 0.55 x 12 = 6.6 s) needs all four devices (6.5 s): job0 cannot go below two, so job2 is declined and
    # job0 keeps its four (done 39.25). job3, the same job at t=40, finds the cluster idle: lean, whose job0 still holds
    # device 0 to t=60, declines it (three devices take 8 s).
    jobs = [_job(0.0, 1.0, 10), _job(0.0, 1.0, 1), _job(10.0, 0.55, 2), _job(40.0, 0.55, 2)]
    run = _run("elastic_lean", jobs)
    r0, _, r2, r3 = run.records
    assert (r2.outcome, r0.resizes, r0.finish_s) == (Outcome.BLOCKED, 1, 39.25)
    assert (r3.outcome, r3.devices, r3.finish_s) == (Outcome.ACCEPTED, (0, 1, 2, 3), 46.5)
    assert run.metrics.accepted == 3 and run.metrics.resizes == 1
    assert [r.outcome for r in _run("lean", jobs).records] == [Outcome.ACCEPTED, Outcome.ACCEPTED, Outcome.BLOCKED, Outcome.BLOCKED]
    assert make_heuristic("elastic_lean").stats() is None


def test_jobs_lean_never_grew_are_not_shrunk():
    # job0 starts on all four devices (deadline 0.55 x 60 = 33 s: four devices take 32.5 s) and never grew: job1 at t=1
    # is declined although job0 could not spare a device anyway, and nothing is tried.
    policy = make_heuristic("elastic_lean")
    run = run_policy(policy, _cost(), [_job(0.0, 0.55, 10), _job(1.0, 1.0, 1)], QueueConfig(), np.random.default_rng(0))
    assert [(r.outcome, r.degree) for r in run.records] == [(Outcome.ACCEPTED, 4), (Outcome.BLOCKED, 0)]
    assert policy.stats() is None


def test_elastic_lean_is_a_policy_name_with_leans_options():
    policy = make_heuristic("elastic_lean:admit=0.9:cap=2+best_fit")
    assert policy.elastic and policy.name == "elastic_lean:admit=0.9:cap=2+best_fit"
    assert (policy.admit, policy.cap, policy.rule) == (0.9, 2, "best_fit")
    with pytest.raises(PolicyError, match="unknown policy"):
        make_heuristic("elastic_lean:admit=best")  # tuned on other streams: not an elastic option


def _workload(seed: int, load: float, jobs: int) -> list[JobSpec]:
    workload = Workload([chain()], BetaDistribution("A"), load, 4, jobs, iterations=10, size=SizeDistribution("loguniform:0.5:4"))
    return list(workload.jobs(np.random.default_rng(seed)))


@pytest.mark.parametrize("queue", ["none", "edf-bf:4"])
def test_the_same_seed_gives_the_same_run_and_every_accepted_job_meets_its_deadline(queue):
    jobs = _workload(3, 1.5, 40)
    first, again = (_run("elastic_lean", jobs, queue, seed=7) for _ in range(2))
    assert first.records == again.records and first.metrics == again.metrics
    assert first.metrics.resizes > 0
    done = [r for r in first.records if r.outcome is Outcome.ACCEPTED]
    assert all(r.finish_s is not None and r.finish_s <= r.arrival_s + r.deadline_s * (1 + 1e-9) for r in done)


def test_with_shrink_all_a_job_it_never_grew_gives_a_device_back_to_admit():
    # job0 and job1 (10 iterations, deadline 0.85 x 60 = 51 s: one device, 60 s, misses) start on two devices of one
    # server each (35 s) and fill the cluster: neither grows. At t=20 each has 20 / 3.5 iterations done, and on one
    # device would finish at 20 + 4 + (10 - 20 / 3.5) x 6 = 49.71 s <= 51. job2 (1 iteration, deadline 6 s) arrives then:
    # elastic_lean shrinks only what it grew and declines it; with shrink=all job0 (the lower id of two equal losses)
    # gives device 1 back and job2 runs there to t=26. Then job0 (20 / 3.5 + 2 / 6 iterations done, paused to t=24)
    # grows back: 26 + 4 + (10 - 20 / 3.5 - 2 / 6) x 3.5 = 43.83 s.
    jobs = [_job(0.0, 0.85, 10), _job(0.0, 0.85, 10), _job(20.0, 1.0, 1)]
    grown_only = _run("elastic_lean", jobs).records
    assert [(r.outcome, r.devices) for r in grown_only] == [(Outcome.ACCEPTED, (0, 1)), (Outcome.ACCEPTED, (2, 3)), (Outcome.BLOCKED, ())]
    policy = make_heuristic("elastic_lean:shrink=all")
    assert policy.name == "elastic_lean:shrink=all" and policy.shrink_all
    r0, r1, r2 = run_policy(policy, _cost(), jobs, QueueConfig(), np.random.default_rng(0)).records
    assert (r2.outcome, r2.devices, r2.finish_s) == (Outcome.ACCEPTED, (1,), 26.0)
    assert r0.resizes == 2 and r0.finish_s == pytest.approx(26 + PAUSE + (10 - 20 / 3.5 - 2 / 6) * 3.5)
    assert (r1.resizes, r1.finish_s) == (0, 35.0)
    assert policy.stats() == {"admitted_by_shrinking": 1, "declined_by_shrinking": 0}
    with pytest.raises(PolicyError, match="unknown policy"):
        make_heuristic("elastic_lean:shrink=grown")  # the default is no option: one name for one policy
