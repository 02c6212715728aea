"""Chronus (placer.baselines.chronus) on cases worked out by hand.

The toy: two servers of two devices, the ``chain`` graph under the sipml model: 6 s per iteration on one device, 3.5 s
on two of one server, 4 s on two of two servers; a job of I iterations has a deadline of beta x 6 I s.
"""

import numpy as np
import pytest

from placer.baselines.chronus import Chronus
from placer.baselines.policy import run_policy
from placer.baselines.registry import make_heuristic
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.sim.types import BlockReason, Outcome
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster


def _run(policy: str, jobs: list[JobSpec], queue: str = "none", seed: int = 0):
    cost = CostModel(toy_cluster(2, 2), strategy="sipml")
    return run_policy(make_heuristic(policy), cost, jobs, QueueConfig.parse(queue), np.random.default_rng(seed))


def _job(arrival: float, beta: float, iterations: int) -> JobSpec:
    return JobSpec(arrival, chain(), beta, iterations)


def test_a_lease_is_the_fewest_devices_on_the_fewest_servers_and_a_job_without_one_is_declined():
    # job1 (10 iterations, deadline 42 s) needs two devices: Chronus consolidates it on server 1 (35 s), para_min's
    # first fit spreads it over devices 1 and 2 (40 s). At t=6.5 job2 (2 iterations, deadline 7.2 s) needs two devices of
    # one server (7 s): Chronus has server 0 free and admits it; para_min has devices 0 and 3 and declines it.
    jobs = [_job(0.0, 1.0, 1), _job(0.0, 0.7, 10), _job(6.5, 0.6, 2)]
    run = _run("chronus", jobs)
    assert [(r.outcome, r.devices, r.finish_s) for r in run.records] == [
        (Outcome.ACCEPTED, (0,), 6.0),
        (Outcome.ACCEPTED, (2, 3), 35.0),
        (Outcome.ACCEPTED, (0, 1), 13.5),
    ]
    para_min = _run("para_min", jobs)
    assert [(r.outcome, r.devices) for r in para_min.records] == [
        (Outcome.ACCEPTED, (0,)),
        (Outcome.ACCEPTED, (1, 2)),
        (Outcome.BLOCKED, ()),
    ]
    # the loss system: a lease starts now or never (at t=1 only device 1 is free)
    late = _run("chronus", [_job(0.0, 1.0, 1), _job(0.0, 0.7, 10), _job(1.0, 0.6, 2)]).records[2]
    assert (late.outcome, late.reason) == (Outcome.BLOCKED, BlockReason.REJECTED)


# job0 (10 iterations, deadline 60) and job1 (4, deadline 24) take a device each of server 0, job2 (2 iterations,
# deadline 7.2 s) server 1 to t=8. job3 (3 iterations at t=2, deadline at t=20) is admitted on a lease of server 1 from
# t=8 to 18.5 (one device would take 18 s from t=8). job4 (2 iterations at t=4, deadline at t=16) would need server 1
# from t=8 too (7 s), and with job3's lease after its own, job3 would miss: job4 cannot be guaranteed and is not admitted.
QUEUED = [_job(0.0, 1.0, 10), _job(0.0, 1.0, 4), _job(1.0, 0.6, 2), _job(2.0, 1.0, 3), _job(4.0, 1.0, 2)]


def test_a_job_that_would_break_an_admitted_lease_is_not_admitted():
    run = _run("chronus", QUEUED, "edf-bf:4")
    by_id = {r.job_id: r for r in run.records}
    assert (by_id[3].outcome, by_id[3].devices, by_id[3].wait_s, by_id[3].finish_s) == (Outcome.ACCEPTED, (2, 3), 6.0, 18.5)
    assert (by_id[4].outcome, by_id[4].reason) == (Outcome.BLOCKED, BlockReason.EXPIRED)
    # deadline first without admission control: job4 (the earlier deadline) is offered first at t=8 and takes server 1
    for fixed in ("para_min@edf-bf", "lean@edf-bf"):
        other = {r.job_id: r for r in _run(fixed, QUEUED, "edf-bf:4").records}
        assert (other[4].outcome, other[4].devices, other[3].outcome) == (Outcome.ACCEPTED, (2, 3), Outcome.BLOCKED)


def test_chronus_orders_its_queue_deadline_first_unless_its_name_says_otherwise():
    queue = QueueConfig.parse("fifo:8")
    assert make_heuristic("chronus").queue(queue) == QueueConfig(8, "edf", True)
    assert make_heuristic("chronus@sjf").queue(queue) == QueueConfig(8, "sjf", False)
    assert make_heuristic("chronus").queue(QueueConfig()) == QueueConfig()
    policy = make_heuristic("chronus")
    assert policy.name == "chronus" and not policy.elastic
    with pytest.raises(PolicyError, match="consolidation"):
        make_heuristic("chronus+spread")


@pytest.mark.parametrize("queue", ["none", "edf-bf:4", "fifo:4"])
def test_the_same_seed_gives_the_same_run(queue):
    workload = Workload([chain()], BetaDistribution("A"), 1.5, 4, 40, iterations=10, size=SizeDistribution("loguniform:0.5:4"))
    jobs = list(workload.jobs(np.random.default_rng(5)))
    first, again = (_run("chronus", jobs, queue, seed=9) for _ in range(2))
    assert first.records == again.records and first.metrics == again.metrics
    assert 0 < first.metrics.accepted < len(jobs)


class _Replanning(Chronus):
    """Chronus planning afresh at every offer: no state ever equals the one its last plan was made in."""

    def _state(self, view, waiting):
        return object()


class _Counting(Chronus):
    offers: int = 0
    replans: int = 0

    def decide(self, job, view):
        self.offers += 1
        return super().decide(job, view)

    def _replan(self, view, waiting):
        self.replans += 1
        return super()._replan(view, waiting)


@pytest.mark.parametrize("seed", [7, 8])
def test_a_plan_kept_between_offers_at_one_moment_decides_as_replanning_at_each(seed):
    # bursts of three jobs arriving at once (as a sweep does); with backfilling the queue offers each waiting job at a
    # completion, one moment: the plan made at the first offer serves the others
    rng = np.random.default_rng(seed)
    jobs = [_job(10.0 * k, float(rng.uniform(0.5, 1.0)), int(rng.integers(1, 6))) for k in range(30) for _ in range(3)]
    cost = CostModel(toy_cluster(2, 2), strategy="sipml")
    kept = make_heuristic("chronus")
    counting, replanning = _Counting(max_degree=kept.max_degree, spec=kept.spec), _Replanning(max_degree=kept.max_degree, spec=kept.spec)
    runs = [run_policy(p, cost, jobs, QueueConfig.parse("edf-bf:6"), np.random.default_rng(3)) for p in (counting, replanning)]
    assert runs[0].records == runs[1].records and 0 < runs[0].metrics.accepted < len(jobs)
    assert counting.replans < counting.offers  # the kept plan served some offers (a plan kept regardless fails the first line)
