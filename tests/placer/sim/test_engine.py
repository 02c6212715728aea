"""The compiled engine against the reference simulator: the same records, timeline and metrics on generated streams,
exact values on a hand-worked run, its placement rules and heap against the reference's, and which runs it takes."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.baselines.best import BEST_CANDIDATES
from placer.baselines.policy import Policy, run_metric, run_policy
from placer.baselines.registry import make_heuristic
from placer.cluster.placement import rule_indices
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph
from placer.sim import rollout
from placer.sim.engine import codes, kernels, options
from placer.sim.engine.stream import METRICS_FROM_ARRAYS, program_metric, run_program, supported
from placer.sim.queueing import QueueConfig
from placer.sim.types import BlockReason, Outcome
from placer.workloads.generator import BetaDistribution, JobSpec, SizeDistribution, Workload
from tests.placer.toys import chain, toy_cluster

POLICIES = (
    *BEST_CANDIDATES, "lean:cap=4", "lean+spread", "fixed:3+best_fit", "eff:0.5+spread", "switch:0.5+best_fit", "lean:admit=0.9:free=0.25",
)  # fmt: skip
QUEUES = ("none", "edf", "edf-bf", "fifo", "fifo-bf:8", "sjf-bf:4")
STREAMS_PER_CLUSTER = 250  # x 4 clusters: 1,000 generated streams of 50-200 jobs


def _cases(cluster: str):
    """(policy, queue, beta distribution, load, size spread, jobs, seed) of each of this cluster's streams."""
    rng = np.random.default_rng(sum(map(ord, cluster)))
    for k in range(STREAMS_PER_CLUSTER):
        policy = POLICIES[k % len(POLICIES)]
        queue = QUEUES[(k // len(POLICIES) + k) % len(QUEUES)]
        yield policy, queue, "ABCD"[int(rng.integers(4))], float(rng.choice([0.5, 0.9, 1.3, 2.0])), bool(rng.integers(2)), int(
            rng.integers(50, 201)
        ), k


def _heterogeneous():
    """Two device types of other speeds and memories on servers of other sizes (shapes keyed by kind and memory)."""
    from placer.cluster.topology import Cluster, parse_cluster_spec

    spec = {
        "name": "hetero",
        "device_types": {"fast": {"memory_bytes": 40e9, "speed": 2.0}, "slow": {"memory_bytes": 16e9, "speed": 1.0}},
        "servers": [
            {"count": 2, "devices_per_server": 4, "device_type": "fast"},
            {"count": 3, "devices_per_server": 2, "device_type": "slow"},
            {"count": 1, "devices_per_server": 8, "device_type": "slow"},
        ],
        "links": {"intra_server": {"bandwidth_Bps": 1e11, "latency_s": 1e-6}, "inter_server": {"bandwidth_Bps": 1e10, "latency_s": 1e-5}},
    }
    return Cluster(parse_cluster_spec(spec))


CLUSTERS = {"dgx8x8": lambda: load_cluster("dgx8x8"), "mixed": lambda: load_cluster("mixed"), "pacml": lambda: load_cluster("pacml"),
            "hetero": _heterogeneous}  # fmt: skip


@pytest.mark.parametrize("cluster_name", sorted(CLUSTERS))
def test_engine_matches_the_reference_on_generated_streams(cluster_name):
    cluster = CLUSTERS[cluster_name]()
    cost = CostModel(cluster)
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    differ = []
    for policy, queue, beta, load, spread, n, seed in _cases(cluster_name):
        size = SizeDistribution("loguniform:0.1:10") if spread else SizeDistribution()
        seq = cost.sequential_iteration_s
        workload = Workload(graphs, BetaDistribution(beta), load, cluster.num_devices, n, sequential_iteration_s=seq, size=size)
        jobs = list(workload.jobs(np.random.default_rng(seed)))
        config = QueueConfig.parse(queue)
        reference = rollout.simulate(cost, jobs, make_heuristic(policy).decide, queue=config)
        program = make_heuristic(policy).program()
        assert program is not None and supported(cost, jobs, program), policy
        engine = run_program(cost, jobs, program, config)
        same = (engine.records, engine.busy_timeline, engine.metrics) == (reference.records, reference.busy_timeline, reference.metrics)
        counted = tuple(program_metric(cost, jobs, program, config, metric) for metric in METRICS_FROM_ARRAYS)  # tuning's
        same = same and counted == tuple(getattr(reference.metrics, metric) for metric in METRICS_FROM_ARRAYS)
        if not same:
            differ.append((policy, queue, beta, load, spread, n, seed))
    assert not differ, f"{len(differ)} of {STREAMS_PER_CLUSTER} streams differ, first: {differ[0]}"


def _specs(*arrivals_and_betas):
    return [JobSpec(t, chain(), beta, 1) for t, beta in arrivals_and_betas]


def test_hand_worked_run():
    # As the reference's hand-worked run: two devices on one server; chain: sequential 6 s, degree 2 takes 3.5 s.
    # t=1 job0 (beta 1) on both devices -> done at 4.5; t=2 job1 finds no device; t=5 job2 runs.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    run = run_program(cost, _specs((1.0, 1.0), (2.0, 1.0), (5.0, 1.0)), make_heuristic("para_max").program())
    r0, r1, r2 = run.records
    assert (r0.outcome, r0.devices, r0.jct_s, r0.finish_s, r0.wait_s) == (Outcome.ACCEPTED, (0, 1), 3.5, 4.5, 0.0)
    assert (r1.outcome, r1.reason, r1.degree) == (Outcome.BLOCKED, BlockReason.REJECTED, 0)
    assert (r2.outcome, r2.devices, r2.finish_s) == (Outcome.ACCEPTED, (0, 1), 8.5)
    assert run.busy_timeline == [(0.0, 0), (1.0, 2), (4.5, 0), (5.0, 2), (8.5, 0)]
    specs, program = _specs((1.0, 1.0), (2.0, 1.0), (5.0, 1.0)), make_heuristic("para_max").program()
    assert program_metric(cost, specs, program, QueueConfig(), "blocking_rate") == 1 - 2 / 3
    assert program_metric(cost, specs, program, QueueConfig(), "avoidable_blocking_rate") == 1 / 3  # every job avoidable
    with pytest.raises(ValueError, match="not read from the arrays"):
        program_metric(cost, specs, program, QueueConfig(), "mean_jct_s")


def test_hand_worked_queue():
    # The same cluster with an EDF queue: job1 (t=2) waits for job0's devices and starts at 4.5, 2.5 s late; its deadline
    # (beta 1: 6 s) leaves 3.5 s, exactly degree 2's JCT. Job2 (t=3, beta 0.5: 3 s) can never make it: blocked on arrival.
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    run = run_program(cost, _specs((1.0, 1.0), (2.0, 1.0), (3.0, 0.5)), make_heuristic("para_max").program(), QueueConfig.parse("edf"))
    by_id = {r.job_id: r for r in run.records}
    assert (by_id[1].outcome, by_id[1].wait_s, by_id[1].finish_s) == (Outcome.ACCEPTED, 2.5, 8.0)
    assert (by_id[2].outcome, by_id[2].reason) == (Outcome.BLOCKED, BlockReason.DEADLINE)
    assert [r.job_id for r in run.records] == [0, 2, 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=8), st.integers(1, 20), st.sampled_from(["first_fit", "best_fit", "spread"]))
def test_rules_match_the_reference(counts, degree, rule):
    starts = np.cumsum([0, *counts[:-1]]).astype(np.int64)
    run_count, out = np.array(counts, dtype=np.int64), np.zeros(degree, dtype=np.int64)
    order, take = np.zeros(len(counts), dtype=np.int64), np.zeros(len(counts), dtype=np.int64)
    options.runs_by_free(run_count, len(counts), order)
    assert order.tolist() == np.argsort(-run_count, kind="stable").tolist()
    code = {"first_fit": codes.FIRST_FIT, "best_fit": codes.BEST_FIT, "spread": codes.SPREAD}[rule]
    found = options.rule_positions(code, degree, sum(counts), len(counts), starts, run_count, order, take, out)
    (expected,) = rule_indices(starts.tolist(), counts, rule, [degree])
    assert (tuple(out.tolist()) if found else None) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.5]), st.integers(0, 2)), min_size=1, max_size=40))
def test_heap_pops_in_the_reference_order(events):
    n = len(events)
    ist, ht, hk, hs, hp = np.zeros(codes.N_STATE, dtype=np.int64), np.zeros(n), *(np.zeros(n, dtype=np.int64) for _ in range(3))
    reference: list[tuple[float, int, int, int]] = []
    for payload, (time, kind) in enumerate(events):
        kernels.push(ist, ht, hk, hs, hp, time, kind, payload)
        heapq.heappush(reference, (time, kind, payload, payload))
    popped = []
    for _ in range(n):
        at = kernels.pop(ist, ht, hk, hs, hp)
        popped.append(int(hp[at]))
    assert popped == [heapq.heappop(reference)[3] for _ in range(n)]


def test_run_policy_takes_the_engine_but_for_elastic_runs_and_streams_it_cannot_key(monkeypatch):
    from placer.baselines.registry import PolicyContext, make_policy

    cost = CostModel(toy_cluster(2, 2), strategy="sipml")
    jobs = _specs(*((float(t), 1.0) for t in range(6)))
    calls = []
    monkeypatch.setattr("placer.baselines.policy.simulate", lambda *a, **kw: calls.append("reference") or rollout.simulate(*a, **kw))
    for name in ("lean", "random"):  # a program compiled, a policy asked in Python
        run_policy(make_heuristic(name), cost, jobs, QueueConfig(), np.random.default_rng(0))
    assert calls == []
    elastic = make_policy("elastic_lean", PolicyContext(cost.cluster, 16))
    run_policy(elastic, cost, jobs, QueueConfig.parse("edf-bf"), np.random.default_rng(0))
    assert calls == ["reference"]
    run_policy(make_heuristic("lean"), cost, [JobSpec(0.0, chain(), 1.0, 0)], QueueConfig(), np.random.default_rng(0))
    assert calls == ["reference", "reference"]  # iterations 0: the graph's own, which the engine does not read
    assert Policy().program() is None and make_heuristic("lean:admit=auto").program() is None


def test_unsupported_streams_are_named():
    cost = CostModel(toy_cluster(1, 2), strategy="sipml")
    program = make_heuristic("lean").program()
    assert program is not None and supported(cost, _specs((0.0, 1.0), (1.0, 1.0)), program)
    assert not supported(cost, _specs((1.0, 1.0), (0.0, 1.0)), program)  # out of order: the reference raises
    assert not supported(cost, [], program)
    assert not supported(cost, [JobSpec(0.0, chain(), 1.0, 0)], program)  # iterations 0: the graph's own


def test_prices_are_asked_once_per_graph_and_shape():
    cost = CostModel(load_cluster("dgx8x8"))
    graphs = [resolve_graph("resnet18")]
    workload = Workload(graphs, BetaDistribution("A"), 0.9, 64, 100, sequential_iteration_s=cost.sequential_iteration_s)
    jobs = list(workload.jobs(np.random.default_rng(0)))
    first = run_program(cost, jobs, make_heuristic("lean").program())
    asked = []
    original = cost.predict
    cost.predict = lambda graph, shape, strategy=None: asked.append(shape) or original(graph, shape, strategy)  # type: ignore[method-assign]
    again = run_program(cost, jobs, make_heuristic("lean").program())
    assert asked == [] and again.records == first.records  # the second run prices nothing


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 3),
    st.data(),
    st.floats(5.0, 20.0),
)
def test_thriftiest_matches_the_reference_on_near_ties(degrees, rules, data, deadline):
    # device-seconds within lean's 0.1 % tie of each other (and just outside it), repeats and infeasible options
    from types import SimpleNamespace

    from placer.baselines.heuristics import LEAN_TIE
    from placer.sim.options import OptionTable

    n = degrees * rules
    base = data.draw(st.floats(1.0, 4.0))
    wobble = st.sampled_from([0.0, 0.0004, -0.0004, 0.00099, 0.0011, 0.5, np.inf])
    degree = np.repeat(np.arange(1, degrees + 1), rules)
    jct = np.array([base * (1 + data.draw(wobble)) / d for d in degree])
    repeats = [data.draw(st.booleans()) if i % rules else False for i in range(n)]
    table = SimpleNamespace(degrees=tuple(range(1, degrees + 1)), rules=tuple(range(rules)), repeats=repeats)
    fake = SimpleNamespace(jct_s=jct, table=table, deadline_s=deadline)
    fake._meets = lambda j: OptionTable._meets(fake, j)
    expected = OptionTable.thriftiest(fake, LEAN_TIE)  # type: ignore[arg-type]
    work = SimpleNamespace(deg=degree.astype(np.int64), jct=jct, repeat=np.array(repeats, dtype=np.bool_))
    got = options.thriftiest.py_func(n, deadline, LEAN_TIE, work)
    assert (None if got < 0 else got) == expected


EXTERNAL_POLICIES = ("learned", "random", "lookahead:k=2:h=4", "hindsight:h=4", "learned:pacml")
EXTERNAL_STREAMS = 24  # x 2 clusters


@pytest.mark.parametrize("cluster_name", ["dgx8x8", "mixed"])
def test_policies_that_decide_in_python_run_on_the_engine_as_on_the_reference(cluster_name):
    # the engine's event loop asks the policy at each offer with the view the reference gives: same records and metrics
    from placer.baselines.registry import PolicyContext, make_policy

    cluster = CLUSTERS[cluster_name]()
    cost = CostModel(cluster)
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    rng = np.random.default_rng(7)
    differ = []
    for k in range(EXTERNAL_STREAMS):
        name, queue = EXTERNAL_POLICIES[k % len(EXTERNAL_POLICIES)], QUEUES[k % len(QUEUES)]
        seq = cost.sequential_iteration_s
        workload = Workload(graphs, BetaDistribution("ABCD"[k % 4]), float(rng.choice([0.5, 0.9, 1.3])), cluster.num_devices,
                            int(rng.integers(40, 90)), sequential_iteration_s=seq, size=SizeDistribution("loguniform:0.1:10"))  # fmt: skip
        jobs = list(workload.jobs(np.random.default_rng(k)))
        config = QueueConfig.parse(queue)
        reference_policy = make_policy(name, PolicyContext(cluster, 16))
        assert reference_policy.program() is None
        reference_policy.reset(np.random.default_rng(k))
        reference_policy.foresee(jobs)
        reference = rollout.simulate(cost, jobs, reference_policy.decide, queue=reference_policy.queue(config))
        engine = run_policy(make_policy(name, PolicyContext(cluster, 16)), cost, jobs, config, np.random.default_rng(k))
        if (engine.records, engine.busy_timeline, engine.metrics) != (reference.records, reference.busy_timeline, reference.metrics):
            differ.append((name, queue, k))
    assert not differ, f"{len(differ)} of {EXTERNAL_STREAMS} streams differ, first: {differ[0]}"


def test_an_external_decision_that_is_no_placement_is_blocked_as_the_reference_blocks_it():
    from placer.sim.engine.program import external
    from placer.sim.types import Place, Reject

    cost = CostModel(toy_cluster(2, 2), strategy="sipml")
    answers = [Place((0, 0)), Place((7,)), Place(()), Place((1, 0)), Reject(), Place((2,))]
    jobs = _specs(*((float(t), 1.0) for t in range(len(answers))))

    def decide(job, view):
        return answers[job.job_id]

    engine = run_program(cost, jobs, external(4), QueueConfig(), decide)
    reference = rollout.simulate(cost, jobs, decide)
    assert engine.records == reference.records
    reasons = [r.reason for r in engine.records]
    assert reasons[:3] == [BlockReason.NO_CAPACITY] * 3 and reasons[4] is BlockReason.REJECTED
    assert engine.records[3].devices == (1, 0) and engine.records[3].outcome is Outcome.ACCEPTED  # in the order given


@pytest.mark.parametrize("name", ["lean:admit=0.9", "random", "elastic_lean"])
def test_run_metric_is_the_metric_of_run_policy_counted_or_run(name):
    # a rule the engine runs alone is counted from its arrays, any other policy (random draws from its rng, elastic_lean
    # resizes) runs as run_policy runs it: the same value either way, and the rng drawn from alike
    cost = CostModel(load_cluster("dgx8x8"))
    graphs = [resolve_graph(g) for g in PACML_GRAPHS]
    workload = Workload(graphs, BetaDistribution("B"), 1.3, 64, 120, sequential_iteration_s=cost.sequential_iteration_s)
    jobs, queue = list(workload.jobs(np.random.default_rng(3))), QueueConfig.parse("edf-bf")
    for metric in ("avoidable_blocking_rate", "blocking_rate", "mean_jct_s"):
        run = run_policy(make_heuristic(name), cost, jobs, queue, np.random.default_rng(5))
        assert run_metric(make_heuristic(name), cost, jobs, queue, np.random.default_rng(5), metric) == getattr(run.metrics, metric)
