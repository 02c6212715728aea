"""The rollout planners: hindsight on a hand-solved stream, and the rule inside lookahead's rollouts."""

import numpy as np
import pytest

from placer.baselines.lookahead import Hindsight, Lookahead, deviation_kind
from placer.baselines.registry import make_heuristic
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.sim.rollout import simulate
from placer.sim.simulator import Simulator
from placer.sim.types import Outcome, Place, Reject
from placer.workloads.generator import JobSpec
from tests.placer.toys import chain, toy_cluster


def long_job_then_overlapping_pairs() -> list[JobSpec]:
    """Two devices, one device per job (6 s per iteration), no slack: a 60 s job at 0, then three
    pairs of 6 s jobs whose members overlap, at 1, 10 and 20 s."""
    pairs = [JobSpec(t, chain(), 1.0, 1) for start in (1.0, 10.0, 20.0) for t in (start, start + 0.5)]
    return [JobSpec(0.0, chain(), 1.0, 10), *pairs]


def run(spec: str, jobs: list[JobSpec]):
    """The policy after running ``jobs`` on two single-device servers, and the number it blocked."""
    policy = make_heuristic(spec, max_degree=1)
    policy.reset(np.random.default_rng(0))
    if hasattr(policy, "foresee"):
        policy.foresee(jobs)
    records = simulate(CostModel(toy_cluster(servers=2, per_server=1)), jobs, policy.decide).records
    return policy, sum(r.outcome is not Outcome.ACCEPTED for r in records)


def blocked(spec: str, jobs: list[JobSpec]) -> int:
    return run(spec, jobs)[1]


def test_lean_takes_the_long_job_and_loses_one_of_each_pair():
    assert blocked("lean", long_job_then_overlapping_pairs()) == 3


def test_hindsight_declines_the_long_job_and_takes_every_pair():
    assert blocked("hindsight:h=8:m=0.5", long_job_then_overlapping_pairs()) == 1


def test_hindsight_counts_its_one_deviation_and_forgets_it_on_reset():
    policy, _ = run("hindsight:h=8:m=0.5", long_job_then_overlapping_pairs())
    assert policy.stats() == {"offers": 7, "deviations": {"decline": 1}}  # the long job; lean's choice for every pair member
    policy.reset(np.random.default_rng(1))
    assert policy.stats() == {"offers": 0, "deviations": {}}


def test_hindsight_that_follows_lean_counts_no_deviation():
    policy, _ = run("hindsight:h=1:m=0.5", long_job_then_overlapping_pairs())
    assert policy.stats() == {"offers": 7, "deviations": {}}


@pytest.mark.parametrize(
    ("base", "chosen", "kind"),
    [
        (Place((0, 1)), Reject(), "decline"),
        (Reject(), Place((0,)), "start"),
        (Place((0, 1)), Place((2,)), "fewer devices"),
        (Place((0,)), Place((0, 1, 2, 3)), "more devices"),
        (Place((0, 1)), Place((2, 3)), "other devices"),
    ],
)
def test_deviation_kinds(base, chosen, kind):
    assert deviation_kind(base, chosen) == kind


def test_hindsight_too_short_a_horizon_sees_no_gain_and_follows_lean():
    # with 1 arrival ahead, declining the long job saves one pair member and costs the job itself
    assert blocked("hindsight:h=1:m=0.5", long_job_then_overlapping_pairs()) == 3


def test_hindsight_refuses_to_decide_blind():
    policy = make_heuristic("hindsight")
    policy.reset(np.random.default_rng(0))
    sim = Simulator(CostModel(toy_cluster(servers=2, per_server=1)), long_job_then_overlapping_pairs())
    job = sim.next_job()
    with pytest.raises(PolicyError, match="clairvoyant reference"):
        policy.decide(job, sim.view())


@pytest.mark.parametrize("spec", ["hindsight:k=2", "hindsight:h=0", "hindsight:m=-1"])
def test_bad_hindsight_specs_are_refused(spec):
    with pytest.raises(PolicyError, match="unknown policy"):
        make_heuristic(spec)


def test_specs_build_the_planners():
    assert isinstance(make_heuristic("hindsight:admit=0.9:h=24"), Hindsight)
    assert type(make_heuristic("lookahead:k=2:h=8")) is Lookahead


def test_lookahead_rollouts_decide_with_the_sizes_the_planner_has_seen():
    jobs = [JobSpec(float(t), chain(), 2.0, iterations) for t, iterations in enumerate((1, 5, 2, 9))]
    planner = make_heuristic("lookahead:admit=0.5:k=1:h=2", max_degree=1)
    planner.reset(np.random.default_rng(0))
    simulate(CostModel(toy_cluster(servers=2, per_server=1)), jobs, planner.decide)
    rollout_rule = planner._base_rule()
    assert (rollout_rule.admit, rollout_rule._sizes) == (0.5, [6.0, 12.0, 30.0, 54.0])
