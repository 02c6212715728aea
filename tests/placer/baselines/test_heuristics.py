import numpy as np
import pytest

from placer.baselines.heuristics import Fixed, Lean, ParaMax, ParaMin
from placer.baselines.registry import make_heuristic
from placer.common.errors import PolicyError
from placer.cost import CostModel
from placer.sim.simulator import Simulator
from placer.sim.types import Place, Reject
from placer.workloads.generator import BetaDistribution, JobSpec
from tests.placer.toys import chain, toy_cluster


def _first_job(beta, cluster=None, busy=()):
    cluster = cluster or toy_cluster(2, 2, inter=(1e9, 0.0))
    sim = Simulator(CostModel(cluster, strategy="sipml"), [JobSpec(0.0, chain(), beta, 1)])
    sim.free[list(busy)] = False
    return sim.next_job(), sim.view()


def test_para_max_takes_every_free_device_up_to_the_limit():
    job, view = _first_job(1.0)
    assert ParaMax().decide(job, view) == Place((0, 1, 2, 3))
    assert ParaMax(max_degree=3).decide(job, view) == Place((0, 1, 2))


def test_para_min_takes_the_smallest_degree_meeting_the_deadline():
    # chain on 2x2 (intra 8e9 B/s, inter 1e9 B/s): d=1 6 s, d=2 (one server) 3.5 s.
    job, view = _first_job(3.6 / 6)
    assert ParaMin().decide(job, view) == Place((0, 1))
    job, view = _first_job(1.0, busy=(0,))
    assert ParaMin().decide(job, view) == Place((1,))
    # across servers (1, 2): 1 + (8e9 / 2) / 1e9 + 2 = 7 s; degree 3 is slower still: nothing meets 5.9 s.
    job, view = _first_job(5.9 / 6, busy=(0,))
    assert ParaMin().decide(job, view) == Reject()
    job, view = _first_job(0.01)
    assert ParaMin().decide(job, view) == Reject()


def test_lean_prefers_the_cheaper_placement_over_first_fit():
    # device 0 busy: first-fit puts degree 2 on (1, 2) across servers: 1 + (8e9/2)/1e9 + 2 = 7 s,
    # over the 3.6 s deadline; best-fit keeps it on server 1 (2, 3): 3.5 s.
    job, view = _first_job(3.6 / 6, busy=(0,))
    assert ParaMin().decide(job, view) == Reject()
    assert Lean().decide(job, view) == Place((2, 3))
    assert Lean(cap=1).decide(job, view) == Reject()


def test_fixed_declines_when_its_degree_does_not_fit():
    job, view = _first_job(1.0, busy=(0, 1, 2))
    assert Fixed(degree=2).decide(job, view) == Reject()
    assert Fixed(degree=1).decide(job, view) == Place((3,))


def test_random_is_reproducible_from_its_generator():
    job, view = _first_job(1.0)
    picks = []
    for _ in range(2):
        policy = make_heuristic("random")
        policy.reset(np.random.default_rng(7))
        picks.append([policy.decide(job, view) for _ in range(10)])
    assert picks[0] == picks[1] and len({p.degree for p in picks[0]}) > 1


@pytest.mark.parametrize("spec", ["fixed:0", "fixed:x", "nope", "para_min+worst_fit", "lean:cap=0", "para_max:3"])
def test_bad_policy_names_are_refused(spec):
    with pytest.raises(PolicyError):
        make_heuristic(spec)


def test_policy_names_build_the_right_rules():
    assert make_heuristic("fixed:8+best_fit").rule == "best_fit"
    assert make_heuristic("lean:cap=4").cap == 4


@pytest.mark.parametrize("spec", ["A", "B", "C", "D", "uniform:0.2:0.4", "const:0.5"])
def test_beta_distributions_stay_in_range(spec):
    sample = BetaDistribution(spec).sample(np.random.default_rng(0), 5000)
    assert sample.min() > 0 and sample.max() <= 1


def test_skew_orders_the_beta_distributions():
    means = {s: BetaDistribution(s).sample(np.random.default_rng(0), 20000).mean() for s in "BCD"}
    assert means["B"] < means["C"] < means["D"]


def test_lean_breaks_device_time_ties_towards_fewer_devices():
    # the chain has no parameters, so data parallelism scales exactly: every degree costs 6 device-seconds.
    # beta 1 (deadline 6 s): one device; beta 0.5 (3 s): two devices (3 s), not four (1.5 s).
    cluster = toy_cluster(1, 4)
    for beta, degree in ((1.0, 1), (0.5, 2)):
        sim = Simulator(CostModel(cluster), [JobSpec(0.0, chain(), beta, 1)])
        job = sim.next_job()
        assert make_heuristic("lean").decide(job, sim.view()) == Place(tuple(range(degree)))


def test_lean_breaks_placement_ties_towards_its_rule():
    # device 2 busy, beta 1: one device, 6 s wherever it goes. first_fit takes device 0; best_fit the fullest server
    # that fits (server 1, device 3), leaving server 0 whole for a job of two.
    job, view = _first_job(1.0, busy=(2,))
    assert make_heuristic("lean").decide(job, view) == Place((0,))
    assert make_heuristic("lean+best_fit").decide(job, view) == Place((3,))
    assert make_heuristic("lean:admit=0.9+best_fit").decide(job, view) == Place((3,))
    assert Lean(rule="spread").rules_in_preference() == ("spread", "first_fit", "best_fit")


def test_auto_admission_is_stricter_while_arrivals_come_fast():
    from placer.baselines.heuristics import AutoAdmission
    from placer.sim.history import ArrivalHistory
    from placer.sim.types import Job

    rule, history = AutoAdmission(window=3), ArrivalHistory()
    for i, t in enumerate([0.0, 10.0, 20.0, 30.0, 40.0]):
        history.observe(Job(i, chain(), t, 0.5, i + 1, 1.0))
    assert rule.quantile(history) == rule.calm  # steady: the last 3 gaps are the long-run gap
    for i, t in enumerate([41.0, 42.0, 43.0], start=5):
        history.observe(Job(i, chain(), t, 0.5, i + 1, 1.0))
    assert rule.quantile(history) == rule.busy


def test_best_lean_must_be_tuned_and_picks_the_least_blocking_threshold():
    from placer.baselines.heuristics import BestLean

    policy = make_heuristic("lean:admit=best")
    assert isinstance(policy, BestLean) and policy.admit is None
    job, view = _first_job(1.0)
    with pytest.raises(PolicyError, match="must be tuned"):
        policy.decide(job, view)
    assert policy.choose_admit({0.8: 0.3, 0.85: 0.2, 0.9: 0.2, 0.95: 0.25, 1.0: 0.4}) == 0.9  # a tie goes to the larger
    assert policy.decide(job, view) == Place((0,))
    with pytest.raises(PolicyError):
        make_heuristic("lookahead:admit=best")


def test_efficiency_threshold_takes_the_widest_efficient_degree():
    # chain on 2x2: d=1 6 s (efficiency 1), d=2 3.5 s (6 / 7 = 0.857), d=3 8 s and d=4 6.25 s miss a 6 s deadline.
    job, view = _first_job(1.0)
    assert make_heuristic("eff:0.8").decide(job, view) == Place((0, 1))
    assert make_heuristic("eff:0.9").decide(job, view) == Place((0,))
    assert make_heuristic("eff:0.1").decide(job, view) == Place((0, 1))  # d=4 is wider but misses the deadline
    job, view = _first_job(3.6 / 6)  # only d=2 meets 3.6 s: too inefficient for 0.9, taken all the same
    assert make_heuristic("eff:0.9").decide(job, view) == Place((0, 1))
    job, view = _first_job(3.4 / 6)
    assert make_heuristic("eff:0.5").decide(job, view) == Reject()


def test_load_switch_goes_wide_only_while_the_cluster_is_quiet():
    job, view = _first_job(1.0)  # 4 of 4 free: wide (d=2 meets 6 s, d=4 does not); lean takes d=1 (6 < 7 device-seconds)
    assert make_heuristic("switch:0.5").decide(job, view) == Place((0, 1))
    assert Lean().decide(job, view) == Place((0,))
    job, view = _first_job(1.0, busy=(0, 1))  # 2 of 4 free: not more than half, so lean; more than a quarter, so wide
    assert make_heuristic("switch:0.5").decide(job, view) == Place((2,))
    assert make_heuristic("switch:0.25").decide(job, view) == Place((2, 3))


@pytest.mark.parametrize("spec", ["eff:0", "eff:1.5", "eff", "switch:2", "best:3", "best+spread"])
def test_bad_family_names_are_refused(spec):
    with pytest.raises(PolicyError):
        make_heuristic(spec)


def test_best_must_be_tuned_and_runs_the_member_that_blocks_least_on_tuning_streams():
    from placer.baselines.best import Best
    from placer.baselines.policy import Tuning
    from placer.sim.queueing import QueueConfig
    from placer.workloads.generator import Workload

    policy = make_heuristic("best", max_degree=4)
    assert isinstance(policy, Best) and "fixed:8" not in policy.candidates and "switch:0.75" in policy.candidates
    job, view = _first_job(1.0)
    with pytest.raises(PolicyError, match="must be tuned"):
        policy.decide(job, view)
    cost = CostModel(toy_cluster(2, 2, inter=(1e9, 0.0)), strategy="sipml")
    draw = Workload([chain()], BetaDistribution("uniform:0.5:1.0"), 1.3, 4, 40).jobs
    tuning = Tuning(cost, QueueConfig.parse("edf-bf"), draw, streams=2)
    tuned = policy.tuned(tuning)
    blocking = tuned.stats()["tuning_blocking"]
    assert set(blocking) == set(policy.candidates) and len(set(blocking.values())) > 1  # the members differ: the choice matters
    assert tuned.stats()["chosen"] == min(blocking, key=blocking.get)
    member = make_heuristic(tuned.chosen, max_degree=4)
    assert tuning.blocking(tuned, "avoidable_blocking_rate") == tuning.blocking(member, "avoidable_blocking_rate") == min(blocking.values())


def test_single_best_chooses_once_on_the_mean_over_every_regime_where_best_chooses_per_regime():
    from placer.baselines.policy import Tuning

    class Measured(Tuning):  # a regime whose candidates' tuning blocking is given
        def __init__(self, blocking):
            self.table, self.regimes = blocking, ()

        def blocking(self, policy, metric="blocking_rate"):
            return self.table.get(policy.name, 0.5)

    quiet, busy = Measured({"para_max": 0.1, "lean": 0.3}), Measured({"para_max": 0.5, "lean": 0.2})
    quiet.regimes = busy.regimes = (quiet, busy)
    best, single = make_heuristic("best", max_degree=4), make_heuristic("single-best", max_degree=4)
    assert [best.tuned(regime).chosen for regime in (quiet, busy)] == ["para_max", "lean"]
    assert [single.tuned(regime).chosen for regime in (quiet, busy)] == ["lean", "lean"]  # pooled: 0.3 / 0.25 / 0.5
    assert single.tuned(quiet).tuning_blocking["para_max"] == pytest.approx(0.3) and str(single.spec) == "single-best"
    alone = Measured({"para_max": 0.1, "lean": 0.3})  # no regimes: pooled over itself
    assert single.tuned(alone).chosen == "para_max"
    with pytest.raises(PolicyError, match="single-best picks"):
        make_heuristic("single-best+spread")


def test_a_tuning_runs_each_named_heuristic_once_per_metric(monkeypatch):
    import placer.baselines.policy as policy_module
    from placer.sim.queueing import QueueConfig
    from placer.workloads.generator import Workload

    runs = []
    real = policy_module.run_metric  # what Tuning.per_stream runs, once per stream
    monkeypatch.setattr(policy_module, "run_metric", lambda *a, **k: runs.append(a[0].name) or real(*a, **k))
    cost = CostModel(toy_cluster(2, 2, inter=(1e9, 0.0)), strategy="sipml")
    draw = Workload([chain()], BetaDistribution("uniform:0.5:1.0"), 1.0, 4, 20).jobs
    tuning = policy_module.Tuning(cost, QueueConfig.parse("edf-bf"), draw, streams=2)
    first = tuning.blocking(make_heuristic("lean"), "avoidable_blocking_rate")
    assert tuning.blocking(make_heuristic("lean"), "avoidable_blocking_rate") == first and runs == ["lean", "lean"]  # 2 streams, once
    tuning.blocking(make_heuristic("lean"))  # another metric: measured anew
    assert runs == ["lean"] * 4


def test_adaptive_runs_the_member_of_the_nearest_measured_load_and_holds_placements_that_would_miss_the_deadline():
    from placer.baselines.adaptive import Adaptive

    policy = make_heuristic("adaptive", max_degree=4)
    assert isinstance(policy, Adaptive) and str(policy.spec) == "adaptive"
    with pytest.raises(PolicyError, match="must be tuned"):
        policy.member_for(1.0)
    members = {"para_max": make_heuristic("para_max", max_degree=4), "lean": make_heuristic("lean", max_degree=4)}
    tuned = Adaptive(policy.candidates, policy.spec, ((0.5, "lean"), (2.0, "para_max")), "lean", None, members)
    assert [tuned.member_for(x) for x in (None, 0.3, 0.9, 1.1, 5.0)] == ["lean", "lean", "lean", "para_max", "para_max"]
    tuned.reset(np.random.default_rng(0))
    job, view = _first_job(1.0)
    assert tuned.decide(job, view) == Lean().decide(job, view)  # before the warm-up: the fallback
    tight, view = _first_job(0.01)  # no placement meets this deadline: para_max would place anyway
    assert isinstance(members["para_max"].decide(tight, view), Place)
    tuned = Adaptive(policy.candidates, policy.spec, ((1.0, "para_max"),), "para_max", None, members)
    tuned.reset(np.random.default_rng(0))
    assert tuned.decide(tight, view) == Reject() and tuned.stats()["held"] == 1


def test_adaptive_changes_member_only_after_the_table_asked_for_another_for_sticky_arrivals_in_a_row():
    from placer.baselines.adaptive import Adaptive
    from placer.sim.history import LoadMeter

    members = {"lean": make_heuristic("lean"), "para_max": make_heuristic("para_max")}
    policy = Adaptive(members, None, ((0.5, "lean"), (2.0, "para_max")), "para_max", None, members, sticky=3)
    policy.reset(np.random.default_rng(0))
    picked = []
    for seen, wanted in enumerate(["lean", "lean", "para_max", "lean", "lean", "lean", "lean", "para_max"], start=1):
        policy._meter = LoadMeter()
        policy._meter._seen = set(range(seen))  # the arrival count the stickiness is measured in
        picked.append(policy._sticky(wanted))
    # lean asked at arrivals 1-2, broken at 3 (para_max, the current one), asked again from 4: runs from 7 (4 + 3)
    assert picked == ["para_max"] * 6 + ["lean", "lean"]
