"""A screening program (``external(devices, (degree, rules))``): the engine rejects, unasked, every offer with no feasible
option and logs it; a caller that rejects exactly those offers itself gets the same run, and the log names the offers
it would have seen (job, jobs waiting, devices free), checked on hand-worked runs and against the reference's
:func:`~placer.sim.options.any_feasible` on generated streams."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph
from placer.sim.engine.program import external
from placer.sim.engine.session import EngineSimulator
from placer.sim.engine.stream import run_program
from placer.sim.options import OptionTable, any_feasible
from placer.sim.queueing import QueueConfig
from placer.sim.types import BlockReason, Outcome, Place, Reject
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster

RULES = ("first_fit", "best_fit", "spread")
QUEUES = ("none", "edf", "edf-bf", "fifo", "fifo-bf:8", "sjf-bf:4")


def _specs(*arrivals_and_betas):
    return [JobSpec(t, chain(), beta, 1) for t, beta in arrivals_and_betas]


def _screened_run(cost, jobs, queue, decide, screen):
    """The run with the engine screening by ``screen`` (max degree, rules), and each decision's log, in order."""
    logs = []

    def told(jobs_, log, view):
        logs.append((tuple(j.job_id for j in jobs_), log.tolist()))

    return run_program(cost, jobs, external(cost.cluster.num_devices, screen), queue, decide, None, told), logs


def test_hand_worked_loss_system():
    # Two devices; chain: sequential 6 s, degree 2 takes 3.5 s. Job 0 (t=1) takes both until 4.5; job 1 (t=2) finds
    # none free: screened (1 waiting, itself; 0 free) and rejected unasked; job 2 (t=5) is asked.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    asked = []

    def decide(job, view):
        asked.append(job.job_id)
        return Place((0, 1))

    jobs = _specs((1.0, 1.0), (2.0, 1.0), (5.0, 1.0))
    run, logs = _screened_run(cost, jobs, QueueConfig(), decide, (2, ("first_fit",)))
    assert asked == [0, 2]
    assert logs == [((1,), [[1, 1, 0]])]  # told before job 2's decision
    assert [(r.job_id, r.outcome, r.reason) for r in run.records] == [
        (0, Outcome.ACCEPTED, None), (1, Outcome.BLOCKED, BlockReason.REJECTED), (2, Outcome.ACCEPTED, None),
    ]  # fmt: skip
    answers = {0: Place((0, 1)), 1: Reject(), 2: Place((0, 1))}
    assert run.records == run_program(cost, jobs, external(2), QueueConfig(), lambda job, view: answers[job.job_id]).records


def test_hand_worked_queue():
    # Job 0 (t=1) takes one device for 6 s. Job 1 (t=2, beta 0.7: 4.2 s) is servable (3.5 s on two) but one device
    # (6 s) misses its deadline: screened (1 waiting, 1 free), held, and expires at 2 + 4.2 - 3.5 = 2.7, asked never.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    asked = []

    def decide(job, view):
        asked.append(job.job_id)
        return Place((0,))

    run, logs = _screened_run(cost, _specs((1.0, 1.0), (2.0, 0.7)), QueueConfig.parse("edf"), decide, (2, RULES))
    assert asked == [0]
    assert logs == [((1,), [[1, 1, 1]])]  # told at the end of the run
    expired = run.records[1]
    assert (expired.job_id, expired.reason, expired.wait_s) == (1, BlockReason.EXPIRED, pytest.approx(0.7))


def _cases():
    """(cluster, queue, load, jobs, seed) of the generated streams."""
    rng = np.random.default_rng(5)
    for k in range(48):
        yield ("dgx8x8", "mixed")[k % 2], QUEUES[k % len(QUEUES)], float(rng.choice([0.5, 0.9, 1.3, 2.0])), int(rng.integers(50, 151)), k


def _caller(max_degree: int, rules: tuple[str, ...], seen: list | None):
    """A caller that rejects what has no feasible option (by the reference's any_feasible), else takes a feasible
    option or holds, by a hash of the offer: the same answer to the same offer in any run. ``seen``: the offers it
    rejected as infeasible, as a log's rows."""

    def decide(job, view):
        limit = min(max_degree, view.cluster.num_devices)
        if not any_feasible(job, view, degrees=range(1, limit + 1), rules=rules):
            if seen is not None:
                seen.append([job.job_id, len(view.waiting), int(view.free.sum())])
            return Reject()
        table = OptionTable(job, view, range(1, limit + 1), rules, max_degree)
        feasible = np.flatnonzero(table.feasible)
        pick = zlib.crc32(f"{job.job_id}:{view.now!r}".encode()) % (len(feasible) + 1)
        return Place(table.devices_of(int(feasible[pick]))) if pick < len(feasible) else Reject()

    return decide


@pytest.mark.parametrize("max_degree,rules", [(16, RULES), (4, ("best_fit",))])
def test_screening_matches_a_caller_that_rejects_the_infeasible_itself(max_degree, rules):
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    differ = []
    for cluster_name, queue, load, n, seed in _cases():
        cost = CostModel(load_cluster(cluster_name))
        workload = Workload(graphs, BetaDistribution("ABCD"[seed % 4]), load, cost.cluster.num_devices, n,
                            sequential_iteration_s=cost.sequential_iteration_s, size=SizeDistribution("loguniform:0.1:10"))  # fmt: skip
        jobs, config = list(workload.jobs(np.random.default_rng(seed))), QueueConfig.parse(queue)
        seen: list = []
        asked = run_program(cost, jobs, external(cost.cluster.num_devices), config, _caller(max_degree, rules, seen))
        screened, logs = _screened_run(cost, jobs, config, _caller(max_degree, rules, None), (max_degree, rules))
        rows = [row for _, log in logs for row in log]
        same = (screened.records, screened.busy_timeline, screened.metrics) == (asked.records, asked.busy_timeline, asked.metrics)
        if not same or rows != seen or [j for ids, _ in logs for j in ids] != [r[0] for r in rows]:
            differ.append((cluster_name, queue, load, seed))
    assert not differ, f"{len(differ)} of 48 streams differ, first: {differ[0]}"


def test_a_full_log_is_read_and_the_run_goes_on():
    # A log of two rows fills at once on a busy queue: the stream reads it and runs on, losing no row.
    cost = CostModel(load_cluster("dgx8x8"))
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    workload = Workload(graphs, BetaDistribution("A"), 1.3, 64, 150, sequential_iteration_s=cost.sequential_iteration_s)
    jobs, queue = list(workload.jobs(np.random.default_rng(3))), QueueConfig.parse("edf-bf")

    def logged(rows: int):
        sim = EngineSimulator(cost, jobs, queue=queue, screen=(16, RULES))
        if rows:
            sim._stream.c = sim._stream.c._replace(log=np.zeros((rows, 3), dtype=np.int64))
        decide, out = _caller(16, RULES, None), []
        while (job := sim.next_job()) is not None:
            out.append(sim.screened().tolist())
            sim.decide(decide(job, sim.view()))
        out.append(sim.screened().tolist())
        return out, sim.records

    small, big = logged(2), logged(0)
    assert small == big
    assert max(len(rows) for rows in small[0]) > 2  # the small log did fill
