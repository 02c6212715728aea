"""The waiting queue: hand-worked runs on two devices and the chain graph (sequential 6 s, 3.5 s on both)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.registry import PolicyContext, make_heuristic, make_policy
from placer.common.errors import PolicyError, WorkloadError
from placer.cost import CostModel
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.sim.simulator import Simulator
from placer.sim.types import BlockReason, Outcome, Reject
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster


def _cost():
    return CostModel(toy_cluster(1, 2), strategy="sipml")


def _specs(*arrivals_and_betas):
    return [JobSpec(t, chain(), beta, 1) for t, beta in arrivals_and_betas]


def _by_id(run):
    return {r.job_id: r for r in run.records}


def test_hand_worked_queue_run():
    # t=0: j0, j1 start on one device each (lean: 6 device-s beats 7), both done at 6.
    # t=1: j2 waits; its fastest JCT is 3.5 s, so it must start by 1 + 6 - 3.5 = 3.5: expires then.
    # t=2: j3 finds the one waiting place taken: queue full.
    # t=5: j4 waits; at 6 it has 5 s left: one device (6 s) is too slow, both (3.5 s) meet it.
    specs = _specs((0, 1.0), (0, 1.0), (1, 1.0), (2, 1.0), (5, 1.0))
    run = simulate(_cost(), specs, make_heuristic("lean").decide, queue=QueueConfig(capacity=1, discipline="fifo"))
    r = _by_id(run)
    assert [r[i].devices for i in (0, 1)] == [(0,), (1,)] and r[0].finish_s == 6.0
    assert (r[2].outcome, r[2].reason, r[2].wait_s) == (Outcome.BLOCKED, BlockReason.EXPIRED, pytest.approx(2.5))
    assert (r[3].reason, r[3].wait_s) == (BlockReason.QUEUE_FULL, 0.0)
    assert (r[4].outcome, r[4].devices, r[4].jct_s, r[4].finish_s, r[4].wait_s) == (Outcome.ACCEPTED, (0, 1), 3.5, 9.5, 1.0)
    assert run.metrics.blocking_rate == pytest.approx(2 / 5)


def _hol_run(backfill: bool):
    # j0 holds device 0 until 6. At 0.5 j1 (deadline 3.6 s, needs both devices) comes first in EDF
    # order and is held; j2 (deadline 6 s) fits on device 1 right now.
    specs = _specs((0, 1.0), (0.5, 0.6), (0.5, 1.0))
    return _by_id(simulate(_cost(), specs, make_heuristic("lean").decide, queue=QueueConfig(4, "edf", backfill)))


def test_backfilling_starts_a_job_behind_a_held_head():
    r = _hol_run(backfill=True)
    assert (r[2].outcome, r[2].devices, r[2].wait_s) == (Outcome.ACCEPTED, (1,), 0.0)
    assert r[1].reason is BlockReason.EXPIRED


def test_head_of_line_makes_the_others_wait_until_it_is_too_late():
    # Without backfilling j2 is next offered when j1 expires (0.6): 5.9 s left < 6 s on one device.
    r = _hol_run(backfill=False)
    assert r[1].reason is BlockReason.EXPIRED and r[2].reason is BlockReason.EXPIRED
    assert r[2].wait_s == pytest.approx(2.5)  # must start by 0.5 + 6 - 3.5 = 3.0


def test_a_job_can_start_at_its_latest_start():
    # j1 must start by 2 + 6 - 3.5 = 4.5, exactly when j0 (3.5 s on both devices, from 1) frees them.
    specs = _specs((1.0, 1.0), (2.0, 1.0))
    run = simulate(_cost(), specs, make_heuristic("para_max").decide, queue=QueueConfig(2))
    r = _by_id(run)
    assert (r[1].outcome, r[1].wait_s, r[1].finish_s) == (Outcome.ACCEPTED, 2.5, 8.0)


def test_hopeless_jobs_leave_on_arrival():
    # beta 0.5: 3 s allowed, the fastest placement takes 3.5 s.
    run = simulate(_cost(), _specs((0, 0.5)), make_heuristic("lean").decide, queue=QueueConfig(2))
    assert run.records[0].reason is BlockReason.DEADLINE


def test_held_jobs_stay_waiting_and_are_offered_again():
    sim = Simulator(_cost(), _specs((0, 1.0), (0, 1.0), (0.5, 1.0)), queue=QueueConfig(4))
    assert sim.next_job().job_id == 0  # both arrivals at 0 are in before the first decision
    assert sim.decide(Reject()) is None and len(sim.waiting) == 2  # held, not blocked
    job = sim.next_job()
    assert job.job_id == 1  # backfilling: the next in order
    sim.decide(Reject())
    assert sim.next_job().job_id in (0, 1)  # the arrival at 0.5 opens a new round with all three
    assert len(sim.view().waiting) == 3


def test_the_loss_system_is_a_queue_of_capacity_zero():
    cost = CostModel(toy_cluster(2, 4), strategy="auto")
    from placer.graphs.catalog import resolve_graph

    workload = Workload([resolve_graph("alexnet"), resolve_graph("resnet18")], BetaDistribution("B"), 0.9, 8, 80)
    for policy in ("lean", "para_min+best_fit"):
        a = simulate(cost, workload.jobs(np.random.default_rng(3)), make_heuristic(policy).decide)
        b = simulate(cost, workload.jobs(np.random.default_rng(3)), make_heuristic(policy).decide, queue=QueueConfig(0))
        assert a.records == b.records


def test_queue_specs():
    assert QueueConfig.parse("none") == QueueConfig()
    assert QueueConfig.parse("edf-bf") == QueueConfig(32, "edf", True)
    assert QueueConfig.parse("sjf:8") == QueueConfig(8, "sjf", False)
    assert QueueConfig.parse("fifo-bf:3").spec == "fifo-bf:3"
    for bad in ("lifo", "edf-xx", "edf:x", "edf:0", ""):
        with pytest.raises(WorkloadError):
            QueueConfig.parse(bad)


def test_policies_name_their_own_discipline():
    context = PolicyContext(toy_cluster(1, 2))
    policy = make_policy("lean@fifo", context)
    assert policy.name == "lean@fifo"
    assert policy.queue(QueueConfig(8, "edf", True)) == QueueConfig(8, "fifo", False)
    assert policy.queue(QueueConfig()) == QueueConfig()  # no queue, nothing to order
    with pytest.raises(PolicyError, match="bad queue discipline"):
        make_policy("lean@lifo", context)


def test_orders():
    from placer.sim.types import Job

    jobs = [Job(0, chain(), 0.0, 1.0, 1, 10.0), Job(1, chain(), 1.0, 0.2, 1, 20.0), Job(2, chain(), 2.0, 0.5, 1, 5.0)]
    # absolute deadlines 10, 5, 4.5; sizes 10, 20, 5
    assert [j.job_id for j in QueueConfig(4, "fifo").order(jobs[::-1])] == [0, 1, 2]
    assert [j.job_id for j in QueueConfig(4, "edf").order(jobs)] == [2, 1, 0]
    assert [j.job_id for j in QueueConfig(4, "sjf").order(jobs)] == [2, 0, 1]


def test_size_distribution():
    assert SizeDistribution().mean == 1.0 and SizeDistribution().sample(np.random.default_rng(0)) == 1.0
    spread = SizeDistribution("loguniform:0.1:10")
    assert spread.mean == pytest.approx(9.9 / np.log(100))
    draws = [spread.sample(np.random.default_rng(k)) for k in range(200)]
    assert 0.1 <= min(draws) and max(draws) <= 10 and max(draws) / min(draws) > 30
    for bad in ("loguniform:0:1", "loguniform:2:1", "uniform:1:2", "loguniform:1"):
        with pytest.raises(WorkloadError):
            SizeDistribution(bad)


def test_size_admission_holds_large_jobs_while_others_wait():
    # At 0: j0 (6 s) starts on device 0; j1 (60 s) is larger than the median of the sizes seen
    # (admit=0.3) while j2 waits, so it is held and j2 (6 s) takes device 1. At 6 j1 is alone with
    # both devices free: it starts on both (54 s left: one device's 60 s is too slow, two take 35).
    # Plain lean starts j1 on device 1 at once, and j2 expires at 0 + 6 - 3.5 = 2.5.
    specs = [JobSpec(0, chain(), 1.0, 1), JobSpec(0, chain(), 1.0, 10), JobSpec(0, chain(), 1.0, 1)]
    admit = _by_id(simulate(_cost(), specs, make_heuristic("lean:admit=0.3").decide, queue=QueueConfig(8, "fifo", True)))
    assert [admit[i].devices for i in range(3)] == [(0,), (0, 1), (1,)]
    assert (admit[1].wait_s, admit[1].jct_s) == (6.0, 35.0)
    plain = _by_id(simulate(_cost(), specs, make_heuristic("lean").decide, queue=QueueConfig(8, "fifo", True)))
    assert plain[1].devices == (1,) and plain[2].reason is BlockReason.EXPIRED


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 20), st.floats(0.3, 1.0)), min_size=1, max_size=12),
    st.sampled_from(["fifo", "edf-bf", "sjf-bf:2", "edf:1"]),
    st.sampled_from(["lean", "para_max", "para_min+best_fit", "lean:admit=0.5"]),
)
def test_queue_invariants(jobs, queue, policy):
    specs = _specs(*sorted(jobs))
    run = simulate(_cost(), specs, make_heuristic(policy).decide, queue=QueueConfig.parse(queue))
    assert sorted(r.job_id for r in run.records) == list(range(len(specs)))  # every job settled once
    intervals = []
    for r in run.records:
        assert r.wait_s >= 0
        if r.outcome is Outcome.ACCEPTED:
            assert r.finish_s - r.arrival_s <= r.deadline_s * (1 + 1e-9)  # waiting counts toward the deadline
            intervals += [(r.finish_s - r.jct_s, r.finish_s, d) for d in r.devices]
    for s1, f1, d1 in intervals:  # no device runs two jobs at once
        assert all(not (d1 == d2 and s1 < f2 - 1e-9 and s2 < f1 - 1e-9) for s2, f2, d2 in intervals if (s1, f1) != (s2, f2))
