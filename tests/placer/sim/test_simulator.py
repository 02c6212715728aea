import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.registry import make_heuristic
from placer.cost import CostModel
from placer.graphs.catalog import resolve_graph
from placer.sim.metrics import mean_utilization
from placer.sim.rollout import simulate
from placer.sim.simulator import Simulator
from placer.sim.types import BlockReason, Outcome, Place, Reject
from placer.workloads.generator import BetaDistribution, JobSpec, Workload
from tests.placer.toys import chain, toy_cluster


def _specs(*arrivals_and_betas):
    return [JobSpec(t, chain(), beta, 1) for t, beta in arrivals_and_betas]


def test_hand_worked_run():
    # Two devices on one server; chain: sequential 6 s, degree 2 takes 3.5 s.
    # t=1 job0 (beta 1) on both devices -> done at 4.5; t=2 job1 finds no device; t=5 job2 runs.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    run = simulate(cost, _specs((1.0, 1.0), (2.0, 1.0), (5.0, 1.0)), make_heuristic("para_max").decide)
    r0, r1, r2 = run.records
    assert (r0.outcome, r0.devices, r0.jct_s, r0.finish_s) == (Outcome.ACCEPTED, (0, 1), 3.5, 4.5)
    assert (r1.outcome, r1.reason) == (Outcome.BLOCKED, BlockReason.REJECTED)
    assert r2.outcome is Outcome.ACCEPTED
    m = run.metrics
    assert m.blocking_rate == pytest.approx(1 / 3)
    assert m.window_s == 5.0 and m.completed_in_window == 1
    assert m.throughput_jobs_per_hour == pytest.approx(3600 / 5)
    assert m.work_throughput == pytest.approx(6 / 5)
    assert m.utilization == pytest.approx(2 * 3.5 / (2 * 5))  # busy 1 -> 4.5 on both devices
    assert m.mean_jct_s == 3.5


def test_memory_reason():
    from tests.placer.toys import op, toy_graph

    big = toy_graph({"a": op(1.0, param_bytes=1e9)}, {})  # 4e9 bytes of state
    sim = Simulator(CostModel(toy_cluster(1, 2, memory=3e9), strategy="sipml"), [JobSpec(0.0, big, 1.0, 1)])
    sim.next_job()
    assert sim.decide(Place((0,))).reason is BlockReason.OUT_OF_MEMORY


def test_deadline_and_capacity_reasons():
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    sim = Simulator(cost, _specs((0.0, 0.5), (0.0, 0.5), (0.0, 1.0)))
    sim.next_job()
    assert sim.decide(Place((0,))).reason is BlockReason.DEADLINE  # 6 s > 0.5 x 6 s
    sim.next_job()
    assert sim.decide(Place((0, 0))).reason is BlockReason.NO_CAPACITY  # a device twice
    sim.next_job()
    assert sim.decide(Place((0, 1))).reason is None  # 3.5 s <= 1.0 x 6 s
    assert sim.next_job() is None


def test_deadline_is_checked_against_beta_times_sequential():
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    sim = Simulator(cost, _specs((0.0, 3.4 / 6)))
    job = sim.next_job()
    assert sim.check(job, Place((0, 1))) == (BlockReason.DEADLINE, 3.5)
    record = sim.decide(Place((0, 1)))
    assert (record.outcome, record.reason, record.jct_s) == (Outcome.BLOCKED, BlockReason.DEADLINE, None)


def test_decide_requires_a_pending_job_and_step_requires_a_decision():
    sim = Simulator(CostModel(toy_cluster(1, 2), strategy="sipml"), _specs((1.0, 1.0)))
    with pytest.raises(RuntimeError, match="no job is waiting"):
        sim.decide(Reject())
    sim.next_job()
    with pytest.raises(RuntimeError, match="call decide"):
        sim.step()


def test_completions_free_devices_before_simultaneous_arrivals():
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    sim = Simulator(cost, _specs((0.0, 1.0), (3.5, 1.0)))
    sim.next_job()
    sim.decide(Place((0, 1)))  # finishes at exactly 3.5
    sim.next_job()
    assert sim.view().num_free == 2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), choices=st.lists(st.integers(0, 7), min_size=30, max_size=30))
def test_no_device_is_ever_double_booked(seed, choices):
    cluster = toy_cluster(2, 4)
    cost = CostModel(cluster, strategy="sipml")
    workload = Workload([chain()], BetaDistribution("A"), 2.0, cluster.num_devices, 30)
    sim = Simulator(cost, workload.jobs(np.random.default_rng(seed)))
    busy: dict[int, float] = {}
    for choice in choices:
        job = sim.next_job()
        devices = tuple(range(choice, min(8, choice + 1 + choice % 3)))
        record = sim.decide(Place(devices))
        if record.outcome is Outcome.ACCEPTED:
            for d in devices:
                assert busy.get(d, -1.0) <= job.arrival_s  # free when it was given out
                busy[d] = record.finish_s
        assert int((~sim.free).sum()) == sum(1 for t in busy.values() if t > job.arrival_s)


def test_same_seed_same_records():
    cluster = toy_cluster(2, 4)

    def run(seed):
        workload = Workload([chain()], BetaDistribution("B"), 0.9, cluster.num_devices, 200)
        policy = make_heuristic("random")
        policy.reset(np.random.default_rng([seed, 1]))
        return simulate(CostModel(cluster, strategy="sipml"), workload.jobs(np.random.default_rng(seed)), policy.decide).records

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_utilization_of_a_step_function():
    assert mean_utilization([(0.0, 0), (1.0, 2), (3.0, 1)], 2, 4.0) == pytest.approx((2 * 2 + 1 * 1) / 8)


def test_trace_replay_and_its_errors(tmp_path):
    from placer.common.errors import WorkloadError
    from placer.workloads.generator import read_trace

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,graph,beta,iterations\n1.0,toy,1.0,1\n2.0,toy,1.0,2\n5.0,toy,0.5,1\n")
    specs = read_trace(trace, {"toy": chain()})
    assert [(s.arrival_s, s.beta, s.iterations) for s in specs] == [(1.0, 1.0, 1), (2.0, 1.0, 2), (5.0, 0.5, 1)]
    run = simulate(CostModel(toy_cluster(1, 2), strategy="sipml"), specs, make_heuristic("para_min").decide)
    # job0: degree 1 meets 6 s (done at 7); job1: one device left, 12 s <= 12 s; job2: 3 s deadline, none free.
    assert [(r.degree, r.reason) for r in run.records] == [(1, None), (1, None), (0, BlockReason.REJECTED)]
    for body, message in [
        ("arrival_s,graph,beta,iterations\n1,nope,0.5,1\n", "unknown graph 'nope'"),
        ("arrival_s,graph,beta,iterations\n2,toy,0.5,1\n1,toy,0.5,1\n", "non-decreasing"),
        ("arrival_s,graph\n1,toy\n", "need arrival_s, graph, beta, iterations"),
        ("arrival_s,graph,beta,iterations\n", "trace has no jobs"),
        ("arrival_s,graph,beta,iterations\n1,toy@,0.5,1\n", r"bad batch size in 'toy@' \(use NAME@BATCH"),
        ("arrival_s,graph,beta,iterations\n1,@32,0.5,1\n", "an empty graph name"),
    ]:
        trace.write_text(body)
        with pytest.raises(WorkloadError, match=message):
            read_trace(trace, {"toy": chain()}, resolve_graph)


def test_blocking_series_by_hand():
    from placer.sim.metrics import blocking_series
    from placer.sim.types import BlockReason, JobRecord, Outcome

    def record(t, accepted):
        outcome, reason = (Outcome.ACCEPTED, None) if accepted else (Outcome.BLOCKED, BlockReason.DEADLINE)
        return JobRecord(0, "g", t, 1.0, 1, 1.0, 1.0, outcome, reason, 1, (), None, None)

    # spans [0,1) [1,2) [2,3) [3,4]: one accepted; one blocked of two; none; one blocked
    records = [record(0.5, True), record(1.5, False), record(1.7, True), record(3.9, False)]
    assert blocking_series(records, 4.0, bins=4) == ([0.5, 1.5, 2.5, 3.5], [0.0, 0.5, None, 1.0])
