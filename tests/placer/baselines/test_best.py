"""``elastic-best`` (placer.baselines.best.ElasticBest): the elastic and deadline schedulers tuned per regime.

The toy is test_elastic_lean's: two servers of two devices, the ``chain`` graph, a 4 s resize pause.
"""

import numpy as np
import pytest

from placer.baselines.best import ELASTIC_CANDIDATES, ElasticBest
from placer.baselines.policy import Tuning, run_policy
from placer.baselines.registry import make_heuristic
from placer.baselines.specs import PolicySpec
from placer.common.errors import PolicyError
from placer.sim.queueing import QueueConfig
from placer.sim.simulator import Simulator
from placer.workloads.generator import BetaDistribution, Workload
from tests.placer.baselines.test_elastic_lean import _cost, _job
from tests.placer.toys import chain

HAND_BUILT = [_job(0.0, 1.0, 10), _job(0.0, 1.0, 1), _job(10.0, 1.0, 1)]  # elastic lean resizes job 0 three times here


def _tuning(load: float = 1.3) -> Tuning:
    draw = Workload([chain()], BetaDistribution("uniform:0.5:1.0"), load, 4, 30).jobs
    return Tuning(_cost(), QueueConfig.parse("edf-bf"), draw, streams=2)


def _only(*names: str, spec: str = "elastic-best") -> ElasticBest:
    return ElasticBest({name: make_heuristic(name, max_degree=4) for name in names}, PolicySpec.parse(spec))


def test_elastic_best_is_named_parsed_and_tuned_over_the_elastic_candidates():
    policy = make_heuristic("elastic-best", max_degree=4)
    assert isinstance(policy, ElasticBest) and policy.elastic and str(policy.spec) == "elastic-best"
    assert tuple(policy.candidates) == ELASTIC_CANDIDATES
    assert {"elasticflow", "chronus", "elastic_lean:admit=0.9+best_fit"} <= set(policy.candidates)
    with pytest.raises(PolicyError, match="picks its members' placement rules"):
        make_heuristic("elastic-best+spread")
    with pytest.raises(PolicyError, match="must be tuned"):
        policy.decide(*_first())


def _first():
    sim = Simulator(_cost(), HAND_BUILT)
    return sim.next_job(), sim.view()


def test_elastic_best_runs_the_candidate_that_blocked_least_on_the_tuning_streams_with_its_resizes():
    tuning = _tuning()
    tuned = make_heuristic("elastic-best", max_degree=4).tuned(tuning)
    blocking = tuned.stats()["tuning_blocking"]
    assert set(blocking) == set(ELASTIC_CANDIDATES) and len(set(blocking.values())) > 1  # the candidates differ: the choice matters
    assert tuned.chosen == min(blocking, key=blocking.get)
    member = make_heuristic(tuned.chosen, max_degree=4)
    assert tuning.blocking(tuned, "avoidable_blocking_rate") == tuning.blocking(member, "avoidable_blocking_rate") == min(blocking.values())


def test_a_chosen_elastic_member_resizes_as_it_does_alone():
    tuned = _only("elastic_lean").tuned(_tuning())
    alone = run_policy(
        make_heuristic("elastic_lean", max_degree=4), _cost(), HAND_BUILT, QueueConfig.parse("none"), np.random.default_rng(0)
    )
    through = run_policy(tuned, _cost(), HAND_BUILT, QueueConfig.parse("none"), np.random.default_rng(0))
    assert sum(r.resizes for r in alone.records) == 3
    assert through.records == alone.records


def test_a_chosen_fixed_member_runs_as_it_does_alone_queue_order_included():
    # chronus orders its queue deadline first (edf-bf) whatever the run's queue; elastic-best running it keeps that order
    # and resizes nothing, so the elastic run is chronus's own, record for record
    tuned = _only("chronus").tuned(_tuning())
    assert tuned.queue(QueueConfig.parse("fifo")) == make_heuristic("chronus").queue(QueueConfig.parse("fifo")) != QueueConfig.parse("fifo")
    jobs = list(_tuning(2.0).jobs[0])
    alone = run_policy(make_heuristic("chronus", max_degree=4), _cost(), jobs, QueueConfig.parse("fifo"), np.random.default_rng(0))
    through = run_policy(tuned, _cost(), jobs, QueueConfig.parse("fifo"), np.random.default_rng(0))
    assert any(r.wait_s > 0 for r in alone.records)  # the queue held jobs: its order mattered
    assert through.records == alone.records and all(r.resizes == 0 for r in through.records)


def test_a_queue_order_in_the_name_reaches_the_member_unless_the_member_keeps_its_own():
    edf_bf, fifo = QueueConfig.parse("edf-bf"), QueueConfig.parse("fifo")
    assert _only("elastic_lean", spec="elastic-best@fifo").tuned(_tuning()).queue(edf_bf) == fifo
    assert _only("elastic_lean").tuned(_tuning()).queue(edf_bf) == edf_bf
    assert _only("chronus", spec="elastic-best@fifo").tuned(_tuning()).queue(fifo) == make_heuristic("chronus").queue(fifo) != fifo


def test_a_placement_session_refuses_elastic_best_and_names_an_elastic_member_instead():
    from placer.api.session import Placer

    with pytest.raises(PolicyError, match=r"cannot answer placement queries: .* e\.g\. elastic_lean:admit=0\.9$"):
        Placer(_cost(), make_heuristic("elastic-best", max_degree=4))
    with pytest.raises(PolicyError, match=r"e\.g\. lean:admit=0\.9$"):
        Placer(_cost(), make_heuristic("best", max_degree=4))
