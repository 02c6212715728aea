"""The advisers answering in compiled code (:mod:`placer.sim.engine.advisers`) against their heuristics' ``decide``: at
every offer of generated streams the same decisions, with offers recorded unanswered between; and when the engine
declines a view."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placer.baselines.registry import make_heuristic
from placer.cost import CostModel
from placer.envs import action as act
from placer.envs.advice import Advisers
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph
from placer.sim.engine.session import EngineSimulator
from placer.sim.queueing import QueueConfig
from placer.sim.types import Place, Reject
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload
from tests.placer.sim.test_engine import CLUSTERS


def _stream(cost: CostModel, k: int, rng: np.random.Generator):
    size = SizeDistribution("loguniform:0.1:10") if k % 2 else SizeDistribution()
    graphs = [resolve_graph(g) for g in (*PACML_GRAPHS, "resnet50")]
    load = float(rng.choice([0.5, 0.9, 1.3, 2.0]))
    cluster = cost.cluster
    workload = Workload(graphs, BetaDistribution("ABCD"[k % 4]), load, cluster.num_devices, int(rng.integers(40, 121)),
                        sequential_iteration_s=cost.sequential_iteration_s, size=size)  # fmt: skip
    return list(workload.jobs(rng))


def test_the_engine_declines_a_stale_or_foreign_view():
    cost = CostModel(CLUSTERS["dgx8x8"]())
    sim = EngineSimulator(cost, _stream(cost, 1, np.random.default_rng(3)), queue=QueueConfig.parse("edf-bf"))
    job = sim.next_job()
    assert job is not None
    view = sim.view()
    programs = [make_heuristic("lean+best_fit").program()]
    assert view.engine.advise(job, view, programs) is not None
    wider = replace(view, free=np.ones_like(view.free))  # another state (an elastic offer's devices given back)
    assert view.engine.advise(job, wider, programs) is None
    assert not view.engine.observe(job, wider, programs)
    assert view.engine.advise(replace(job), view, programs) is None  # a job the stream did not offer
    table = act.option_table(job, view, 16, ("first_fit",))
    sim.decide(table[int(np.flatnonzero(table.feasible)[0])].place())  # devices taken: the state changes
    assert view.engine.advise(job, view, programs) is None  # the stream moved on: the old view answers no more


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
        compiled, python = Advisers(names, 16), Advisers(names, 16, compiled=False)
        sim = EngineSimulator(cost, _stream(cost, k, rng), queue=QueueConfig.parse(("edf-bf", "none")[k % 2]))
        while (job := sim.next_job()) is not None:
            view = sim.view()
            reference = python.advise(job, view)
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


def test_an_earlier_installs_compiled_cache_still_unpickles():
    # numba's cache index pickles the kernels' argument types by module: an install before the work arrays moved to
    # placer.sim.engine.work named them in placer.sim.engine.stream, and loading that index must not fail on the name
    import pickle

    from placer.sim.engine import stream, work

    assert stream.Work is work.Work
    assert pickle.loads(b"cplacer.sim.engine.stream\nWork\n.") is work.Work  # a GLOBAL by the old module's name
