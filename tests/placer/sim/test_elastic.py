"""Elastic jobs (placer.sim.elastic): resizes worked out by hand, and elasticity off changing nothing.

The toy: one server of two devices, the ``chain`` graph under the sipml model (6 s per iteration on one device, 3.5 s on
two), no parameters, so a resize pauses a job exactly the cluster's ``restart_s``.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.registry import make_heuristic
from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.cost import CostModel
from placer.sim.elastic import ResizeError, resize_pause_s
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.sim.simulator import PULL, Simulator
from placer.sim.types import Job, Place, Resize
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster

PAUSE = 4.0


def _cluster(restart_s: float = PAUSE) -> Cluster:
    spec = toy_cluster(1, 2).spec.model_dump()
    return Cluster(parse_cluster_spec({**spec, "name": "elastic-toy", "resize": {"restart_s": restart_s}}))


def _cost(restart_s: float = PAUSE) -> CostModel:
    return CostModel(_cluster(restart_s), strategy="sipml")


def _job(arrival: float, beta: float, iterations: int) -> JobSpec:
    return JobSpec(arrival, chain(), beta, iterations)


def test_the_pause_is_the_restart_plus_the_checkpoint_written_and_read():
    cluster = _cluster()
    assert resize_pause_s(cluster, chain()) == PAUSE  # no parameters: no checkpoint
    default = toy_cluster(1, 2)  # no [resize] table: 30 s and 2 GB/s
    assert default.spec.resize is None and "resize" not in default.spec.model_dump()
    assert default.spec.resize_cost.pause_s(1e9) == pytest.approx(30.0 + 2 * 3 * 1e9 / 2e9)


def test_a_resize_table_survives_the_cluster_file_writer(tmp_path):
    from placer.calibration import cluster_toml
    from placer.cluster.topology import load_cluster

    path = tmp_path / "elastic.toml"
    path.write_text(cluster_toml(_cluster().spec))
    assert load_cluster(path).spec == _cluster().spec and "[resize]" in path.read_text()
    path.write_text(cluster_toml(toy_cluster(1, 2).spec))
    assert "[resize]" not in path.read_text()


def test_a_job_grown_when_another_finishes_runs_its_remaining_iterations_at_the_new_speed_after_the_pause():
    # job0 (10 iterations, deadline 60 s) on device 0 from t=0; job1 (2 iterations) on device 1 finishes at t=12;
    # then job0 (2 iterations done, 8 left) grows onto both: 12 + 4 (pause) + 8 x 3.5 = 44.
    grown: list[float] = []

    def rebalance(view):
        grown.append(view.now)
        (running,) = view.running_jobs
        assert running.iterations_done(view.now) == pytest.approx(2.0)
        return (Resize(running.job.job_id, (0, 1)),)

    sim = Simulator(_cost(), [_job(0.0, 1.0, 10), _job(0.0, 1.0, 2)], rebalance=rebalance)
    sim.next_job()
    sim.decide(Place((0,)))
    sim.next_job()
    sim.decide(Place((1,)))
    sim.run()
    assert grown == [12.0]  # after job1's completion (not after job0's own: nothing runs then)
    r0 = sim.records[0]
    assert (r0.degree, r0.finish_s, r0.jct_s) == (1, 44.0, 44.0)  # the degree it started at
    assert (r0.resizes, r0.resize_pause_s) == (1, PAUSE)
    assert r0.device_seconds == pytest.approx(1 * 12 + 2 * (44 - 12))
    assert sim.busy_timeline == [(0.0, 2), (12.0, 2), (44.0, 0)]  # both devices busy throughout: job1 leaves, job0 grows
    from placer.sim.metrics import compute_metrics

    m = compute_metrics(sim.records, sim.busy_timeline, 2)
    assert (m.resizes, m.resize_pause_s) == (1, PAUSE)


def test_devices_taken_back_to_admit_a_job_and_progress_carries_over_through_pauses():
    # job0 on both devices from t=0 (3.5 s per iteration); job1 (1 iteration, deadline 6 s) arrives at t=7:
    # job0 (2 done) shrinks to device 0, paused to t=11, and would finish at 11 + 8 x 6 = 59 (deadline 60).
    # At t=13 job1 is done; job0 (2 + 2/6 done) grows back: 13 + 4 + (8 - 1/3) x 3.5.
    def rebalance(view):
        (running,) = view.running_jobs
        assert running.iterations_done(view.now) == pytest.approx(2 + 2 / 6)
        return (Resize(running.job.job_id, (0, 1)),)

    sim = Simulator(_cost(), [_job(0.0, 1.0, 10), _job(7.0, 1.0, 1)], rebalance=rebalance)
    sim.next_job()
    sim.decide(Place((0, 1)))
    assert sim.records[0].finish_s == 35.0
    sim.next_job()
    view = sim.view()
    (running,) = view.running_jobs
    assert running.iterations_done(7.0) == pytest.approx(2.0) and running.remaining(7.0) == pytest.approx(8.0)
    record = sim.decide(Place((1,), resizes=(Resize(0, (0,)),)))
    assert record is not None and record.finish_s == 13.0
    assert sim.records[0].finish_s == 59.0 and sim.view().running_jobs[0].iterations_done(10.0) == 2.0  # paused
    sim.run()
    r0 = sim.records[0]
    assert r0.finish_s == pytest.approx(13 + PAUSE + (8 - 1 / 3) * 3.5)
    assert (r0.resizes, r0.resize_pause_s) == (2, 2 * PAUSE)
    assert r0.device_seconds == pytest.approx(2 * 7 + 1 * 6 + 2 * (r0.finish_s - 13))


def test_resizes_are_refused_by_a_fixed_simulator_and_where_they_would_break_the_rules():
    fixed = Simulator(_cost(), [_job(0.0, 1.0, 10), _job(1.0, 1.0, 1)])
    fixed.next_job()
    fixed.decide(Place((0, 1)))
    fixed.next_job()
    with pytest.raises(ResizeError, match="not elastic"):
        fixed.decide(Place((1,), resizes=(Resize(0, (0,)),)))

    def elastic(*arrivals):
        sim = Simulator(_cost(), [_job(*a) for a in arrivals], rebalance=lambda view: ())
        sim.next_job()
        sim.decide(Place((0, 1)))
        sim.next_job()
        return sim

    with pytest.raises(ResizeError, match="after its deadline"):  # at t=1: 1 + 4 + (10 - 1/3.5) x 6 = 63.3 > 60
        elastic((0.0, 1.0, 10), (1.0, 1.0, 1)).decide(Place((1,), resizes=(Resize(0, (0,)),)))
    with pytest.raises(ResizeError, match="repeated"):
        elastic((0.0, 1.0, 10), (20.0, 1.0, 1)).decide(Place((1,), resizes=(Resize(0, (0, 0)),)))
    with pytest.raises(ResizeError, match="twice"):
        elastic((0.0, 1.0, 10), (20.0, 1.0, 1)).decide(Place((1,), resizes=(Resize(0, (0,)), Resize(0, (1,)))))
    with pytest.raises(ResizeError, match="not running"):
        elastic((0.0, 1.0, 10), (20.0, 1.0, 1)).decide(Place((1,), resizes=(Resize(7, (0,)),)))
    sim = elastic((0.0, 1.0, 10), (20.0, 1.0, 1))  # at t=20: 20 + 4 + (10 - 20/3.5) x 6 = 49.7 <= 60
    assert sim.decide(Place((1,), resizes=(Resize(0, (0,)),))).reason is None
    assert sim.records[0].finish_s == pytest.approx(24 + (10 - 20 / 3.5) * 6)


def _workload(seed: int, load: float, jobs: int) -> list[JobSpec]:
    workload = Workload([chain()], BetaDistribution("A"), load, 4, jobs, iterations=10, size=SizeDistribution("loguniform:0.5:4"))
    return list(workload.jobs(np.random.default_rng(seed)))


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    load=st.sampled_from([0.5, 1.0, 2.0]),
    policy=st.sampled_from(["para_min", "para_max", "lean", "random"]),
    queue=st.sampled_from(["none", "edf-bf:4"]),
    restart_s=st.sampled_from([0.0, 30.0, 1e3]),
)
def test_with_elasticity_off_nothing_changes(seed, load, policy, queue, restart_s):
    """A fixed policy's run is the same on a fixed simulator, on an elastic one that resizes nothing, and whatever the
    cluster's [resize] table says: the same records (every field) and the same metrics."""
    jobs = _workload(seed, load, 20)
    plain = CostModel(toy_cluster(2, 2), strategy="sipml")
    priced = CostModel(
        Cluster(parse_cluster_spec({**toy_cluster(2, 2).spec.model_dump(), "resize": {"restart_s": restart_s}})), strategy="sipml"
    )
    runs = []
    for cost, rebalance in ((plain, None), (priced, None), (plain, lambda view: ())):
        heuristic = make_heuristic(policy)
        heuristic.reset(np.random.default_rng(seed))
        runs.append(simulate(cost, jobs, heuristic.decide, queue=QueueConfig.parse(queue), rebalance=rebalance))
    first = runs[0]
    assert all(r.resizes == 0 and r.resize_pause_s == 0.0 and r.resized_device_s is None for r in first.records)
    for other in runs[1:]:
        assert other.records == first.records
        assert other.busy_timeline == first.busy_timeline
        assert other.metrics == first.metrics
    assert first.metrics.resizes == 0 and math.isclose(first.metrics.resize_pause_s, 0.0)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    load=st.sampled_from([0.5, 1.0, 2.0]),
    queue=st.sampled_from(["none", "edf-bf:4"]),
    restart_s=st.sampled_from([0.0, 1.0]),
)
def test_rebalance_points_pulled_by_the_caller_run_as_the_callback_does(seed, load, queue, restart_s):
    """``rebalance=PULL``: the caller answering each rebalance point (``next_decision`` / ``rebalanced``) with an elastic
    policy's resizes gives the run the callback gives, record for record; ``next_job`` refuses while a point waits."""
    jobs, cost = _workload(seed, load, 20), _cost(restart_s)
    callback = make_heuristic("elastic_lean")
    callback.reset(np.random.default_rng(seed))
    expected = simulate(cost, jobs, callback.decide, queue=QueueConfig.parse(queue), rebalance=callback.rebalance)
    pulled = make_heuristic("elastic_lean")
    pulled.reset(np.random.default_rng(seed))
    sim = Simulator(cost, jobs, queue=QueueConfig.parse(queue), rebalance=PULL)
    points = 0
    while (point := sim.next_decision()) is not None:
        if isinstance(point, Job):
            sim.decide(pulled.decide(point, sim.view()))
        else:
            points += 1
            with pytest.raises(RuntimeError, match="rebalance point waits"):
                sim.next_job()
            sim.rebalanced(pulled.rebalance(point))
    sim.run()
    assert sim.records == expected.records
    assert points > 0 or expected.metrics.resizes == 0


def test_run_answers_the_rebalance_points_left_with_no_resize():
    """Draining a PULL simulator with ``run`` resizes nothing: the run of a fixed decision rule, on an elastic simulator."""
    jobs, cost = _workload(3, 2.0, 20), _cost()
    plain = simulate(cost, jobs, make_heuristic("para_max").decide, rebalance=lambda view: ())
    sim = Simulator(cost, jobs, rebalance=PULL)
    while (point := sim.next_decision()) is not None:
        if isinstance(point, Job):
            sim.decide(make_heuristic("para_max").decide(point, sim.view()))
        else:
            sim.run(until=sim.now)  # a point left open: run answers it with no resize
            assert not sim.rebalancing
    sim.run()
    assert sim.records == plain.records
    with pytest.raises(RuntimeError, match="no rebalance point waits"):
        sim.rebalanced(())
