"""The engine's option tables of an offer (:mod:`placer.sim.engine.offers`) against the cost model's: at every offer of
generated streams, the same options, arrays, choices and observation rows, bit for bit; and when the engine declines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placer.cost import CostModel
from placer.envs import action as act
from placer.envs.advice import Advisers
from placer.envs.features import option_rows
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph
from placer.sim.engine.session import EngineSimulator
from placer.sim.engine.table import EngineOptions
from placer.sim.queueing import QueueConfig
from placer.sim.types import Place, Reject
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload
from tests.placer.sim.test_engine import CLUSTERS

RULE_SETS = (("first_fit", "best_fit", "spread"), ("best_fit",), ("spread", "first_fit"))
STREAMS_PER_CLUSTER = 12  # x 4 clusters, 40-120 jobs each: some 6,000 offers compared


def _stream(cost: CostModel, k: int, rng: np.random.Generator):
    size = SizeDistribution("loguniform:0.1:10") if k % 2 else SizeDistribution()
    graphs = [resolve_graph(g) for g in (*PACML_GRAPHS, "resnet50")]
    load = float(rng.choice([0.5, 0.9, 1.3, 2.0]))
    cluster = cost.cluster
    workload = Workload(graphs, BetaDistribution("ABCD"[k % 4]), load, cluster.num_devices, int(rng.integers(40, 121)),
                        sequential_iteration_s=cost.sequential_iteration_s, size=size)  # fmt: skip
    return list(workload.jobs(rng))


def _same_tables(engine: EngineOptions, reference, max_degree: int) -> list[str]:
    """What differs between the two tables (empty: nothing)."""
    wrong = []
    if list(engine) != list(reference):
        wrong.append("options")
    for name in ("feasible", "jct_s"):
        if not np.array_equal(getattr(engine, name), getattr(reference, name)):
            wrong.append(name)
    if (engine.num_free, engine.whole, len(engine)) != (reference.num_free, reference.whole, len(reference)):
        wrong.append("counts")
    for tie in (0.0, 0.05, 0.5):
        if engine.thriftiest(tie) != reference.thriftiest(tie):
            wrong.append(f"thriftiest({tie})")
    for degree in range(0, max_degree + 2):
        if list(engine.at_degree(degree)) != list(reference.at_degree(degree)):
            wrong.append(f"at_degree({degree})")
    return wrong


def _rows(table, view, max_degree):
    left = max(table.job.remaining_s(view.now), 1e-9)
    return option_rows(table, view, max_degree, left, table.job.sequential_jct_s, table.whole, [])


@pytest.mark.parametrize("cluster_name", sorted(CLUSTERS))
def test_offer_tables_match_the_cost_models(cluster_name):
    cost = CostModel(CLUSTERS[cluster_name]())
    rng = np.random.default_rng(7)
    differ, offers = [], 0
    for k in range(STREAMS_PER_CLUSTER):
        rules, max_degree = RULE_SETS[k % len(RULE_SETS)], (16, 8, 40)[k % 3]
        queue = QueueConfig.parse(("none", "edf-bf", "fifo:4")[k % 3])
        sim = EngineSimulator(cost, _stream(cost, k, rng), queue=queue)
        while (job := sim.next_job()) is not None:
            view = sim.view()
            engine = act.option_table(job, view, max_degree, rules)
            assert isinstance(engine, EngineOptions)
            plain = replace(view, tables=None)
            reference = act.option_table(job, plain, max_degree, rules)
            assert type(reference) is not EngineOptions
            wrong = _same_tables(engine, reference, max_degree)
            if not np.array_equal(_rows(engine, view, max_degree), _rows(reference, plain, max_degree)):
                wrong.append("rows")
            if act.any_option(job, view, max_degree, rules) != act.any_option(job, plain, max_degree, rules):
                wrong.append("any_option")
            if wrong:
                differ.append((k, job.job_id, wrong))
            offers += 1
            feasible = np.flatnonzero(engine.feasible)
            choice = rng.choice([-1, *feasible.tolist()]) if len(feasible) else -1
            sim.decide(engine[int(choice)].place() if choice >= 0 else Reject())
    assert offers > 300
    assert not differ, f"{len(differ)} of {offers} offers differ, first: {differ[0]}"


def test_the_engine_declines_a_stale_or_foreign_view():
    cost = CostModel(CLUSTERS["dgx8x8"]())
    sim = EngineSimulator(cost, _stream(cost, 1, np.random.default_rng(3)), queue=QueueConfig.parse("edf-bf"))
    job = sim.next_job()
    assert job is not None
    view = sim.view()
    rules = ("first_fit",)
    assert view.tables.options(job, view, 16, rules) is not None
    wider = replace(view, free=np.ones_like(view.free))  # another state (an elastic offer's devices given back)
    assert view.tables.options(job, wider, 16, rules) is None
    assert view.tables.options(job, view, 16, ("no_such_rule",)) is None
    assert view.tables.options(replace(job), view, 16, rules) is None  # a job the stream did not offer
    table = act.option_table(job, view, 16, rules)
    sim.decide(table[int(np.flatnonzero(table.feasible)[0])].place())  # devices taken: the state changes
    assert view.tables.options(job, view, 16, rules) is None  # the stream moved on: the old view's tables are gone


ADVISER_SETS = (
    ("lean+best_fit", "para_min+best_fit", "lean:admit=0.8+best_fit", "lean:admit=0.9+best_fit", "lean:admit=0.95+best_fit",
     "lean:admit=0.95", "switch:0.75"),  # the recipe's
    ("para_max", "fixed:4+spread", "eff:0.5", "lean:cap=4", "lean:admit=0.9:free=0.25+spread", "random"),  # one in Python
)  # fmt: skip


@pytest.mark.parametrize("cluster_name", sorted(CLUSTERS))
def test_compiled_advisers_answer_as_their_heuristics(cluster_name):
    cost = CostModel(CLUSTERS[cluster_name]())
    rng = np.random.default_rng(11)
    differ, offers = [], 0
    for k in range(8):
        names = ADVISER_SETS[k % len(ADVISER_SETS)]
        compiled, python = Advisers(names, 16), Advisers(names, 16)
        sim = EngineSimulator(cost, _stream(cost, k, rng), queue=QueueConfig.parse(("edf-bf", "none")[k % 2]))
        while (job := sim.next_job()) is not None:
            view = sim.view()
            reference = python.advise(job, replace(view, tables=None))
            if not act.any_option(job, view, 16, ("first_fit", "best_fit")) and k % 4 < 2:
                compiled.observe(job, view)  # as the env records an offer it steps past: the later answers still agree
            elif (engine := compiled.advise(job, view)) != reference:
                differ.append((k, job.job_id, engine, reference))
            offers += 1
            feasible = [d for d in reference if isinstance(d, Place)]
            sim.decide(feasible[int(rng.integers(len(feasible)))] if feasible and rng.random() < 0.8 else Reject())
        assert compiled._compiled and not python._compiled
    assert offers > 300
    assert not differ, f"{len(differ)} of {offers} offers differ, first: {differ[0]}"
