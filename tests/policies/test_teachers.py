"""The warm start's teachers: one heuristic, or ``best`` tuned per regime and told each episode's regime."""

from pathlib import Path

import numpy as np
import pytest

from placer.baselines.best import BEST_CANDIDATES, TUNING_METRIC
from placer.baselines.registry import make_heuristic
from placer.cluster.topology import load_cluster
from placer.cost import CostModel
from placer.envs.config import EnvConfig
from placer.envs.regime import Regime
from placer.evaluate.stats import mean_ci95
from placer.graphs.catalog import resolve_graph
from placer.policies.imitation import collect
from placer.policies.teachers import Teachers, chosen_member, regime_members, regimes, tune_regime, tuned_per_regime

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "experiments" / "policies" / "default.pt"  # retired: named by its file
DEFAULT = f"learned:{DEFAULT_FILE}"
CONFIG = EnvConfig(
    clusters=("dgx8x8",), graphs=("alexnet", "gnmt"), loads=(0.5, 1.3), beta_dists=("C",), queue="edf-bf",
    size="loguniform:0.1:10", jobs=40, max_nodes=64, max_edges=128,
)  # fmt: skip


def test_regimes_are_every_draw_of_the_env_named_as_its_reset_info_names_them():
    rows = regimes(CONFIG.with_changes(structure=("iid", "daily")))
    assert [(r.load, r.structure) for r in rows] == [(0.5, "iid"), (0.5, "daily"), (1.3, "iid"), (1.3, "daily")]
    assert {r.queue for r in rows} == {"edf-bf:32"} and {r.cluster for r in rows} == {"dgx8x8"}
    assert rows[0].key == "dgx8x8|0.5|C|edf-bf:32|loguniform:0.1:10|iid"
    from placer import envs
    _, info = envs.ClusterPlacementEnv(CONFIG).reset(seed=0)
    assert Regime.from_info(info) in regimes(CONFIG)


def test_each_episode_is_taught_by_its_regimes_member():
    assert tuned_per_regime("best") and not tuned_per_regime("lean:admit=0.9")
    with pytest.raises(ValueError, match="regime_members"):
        Teachers("best", 16)
    low, high = (r.key for r in regimes(CONFIG))
    teachers = Teachers("best", 16, {low: "para_max", high: "lean:admit=0.9"})
    low_info, high_info = (r.as_info() for r in regimes(CONFIG))
    assert teachers.for_episode(low_info).name == "para_max" and teachers.for_episode(high_info).name == "lean:admit=0.9"
    assert teachers.for_episode(low_info) is teachers.for_episode(low_info)  # built once
    assert Teachers("lean@edf", 16).for_episode(low_info).name == "lean"  # offered in the env's queue order


def test_a_table_naming_one_member_everywhere_records_what_that_member_records():
    everywhere = {r.key: "para_min+best_fit" for r in regimes(CONFIG)}
    by_table = collect(CONFIG, "best", 60, seed=4, members=everywhere)
    direct = collect(CONFIG, "para_min+best_fit", 60, seed=4)
    assert np.array_equal(by_table.actions, direct.actions) and np.array_equal(by_table.returns, direct.returns)


def test_tuning_a_regime_scores_every_candidate_and_picks_the_least_avoidable_blocking():
    member, blocking = tune_regime(CONFIG, regimes(CONFIG)[1:])
    assert set(blocking) == set(BEST_CANDIDATES) and member == min(BEST_CANDIDATES, key=blocking.__getitem__)
    low, high = (tune_regime(CONFIG, [row])[1] for row in regimes(CONFIG))
    _, pooled = tune_regime(CONFIG, regimes(CONFIG))  # both loads: each candidate's mean over them
    assert pooled["lean"] == pytest.approx((low["lean"] + high["lean"]) / 2)


def test_a_pooled_teacher_names_one_member_per_group():
    members = regime_members(CONFIG.with_changes(loads=(0.5,), beta_dists=("B", "C")), pooled=("beta_dist",))
    assert len(members) == 2 and len(set(members.values())) == 1
    with pytest.raises(ValueError, match="cannot pool"):
        regime_members(CONFIG, pooled=("deadline",))


def test_a_setting_is_tuned_and_validated_on_its_own_streams():
    from placer.policies.validation import validation_configs

    config = CONFIG.with_changes(loads=(1.3,), settings=({}, {"clusters": "pacml", "queue": "none", "loads": (0.9,)}))
    queued, loss = regimes(config)
    assert (loss.cluster, loss.queue, loss.load) == ("pacml", "none", 0.9)
    _, blocking = tune_regime(config, [loss])  # the loss system's streams on pacml: holding a job blocks it
    alone = CONFIG.with_changes(clusters=("pacml",), queue="none", loads=(0.9,))
    assert blocking == tune_regime(alone, regimes(alone))[1]
    evaluations = list(validation_configs(config, 2, "lean"))
    assert [(e.cluster, e.workload.queue, e.loads) for e in evaluations] == [("dgx8x8", ("edf-bf",), (1.3,)), ("pacml", ("none",), (0.9,))]


def test_a_candidate_beside_the_families_is_scored_on_the_same_streams_and_chosen_where_it_blocks_less():
    rows = regimes(CONFIG)[1:]  # load 1.3
    member, heuristics = tune_regime(CONFIG, rows)
    _, with_candidates = tune_regime(CONFIG, rows, candidates=("lean:admit=0.5", "fixed:1"))
    assert {k: with_candidates[k] for k in heuristics} == heuristics  # the families' scores are unchanged
    assert set(with_candidates) - set(heuristics) == {"lean:admit=0.5", "fixed:1"}
    fixed = make_heuristic("fixed:1", max_degree=16)
    assert with_candidates["fixed:1"] == _tuning_blocking(CONFIG, rows[0], fixed)  # its mean over the regime's tuning streams
    chosen = tune_regime(CONFIG, rows, candidates=("lean:admit=0.5", "fixed:1"))[0]
    beaten = [name for name in ("lean:admit=0.5", "fixed:1") if with_candidates[name] < heuristics[member]]
    assert chosen == (min(beaten, key=with_candidates.__getitem__) if beaten else member)  # ties go to the heuristic
    assert tune_regime(CONFIG, rows, candidates=(member,))[0] == member  # a candidate no better than the member is not chosen


def test_a_candidate_is_the_member_only_where_it_leads_the_families_best_by_the_margin():
    blocking = {"lean": 0.5, "learned:a": 0.475, "learned:b": 0.4, "learned:c": 0.4}
    assert chosen_member("lean", blocking, ["learned:a"]) == "learned:a"  # any lead, without a margin
    assert chosen_member("lean", blocking, ["learned:a"], margin=0.1) == "lean"  # 5 % is not 10 %
    assert chosen_member("lean", blocking, ["learned:a", "learned:c", "learned:b"], margin=0.1) == "learned:c"  # least, first of equals
    assert chosen_member("lean", blocking, ["learned:b"], margin=0.2) == "lean"  # exactly 20 % fewer does not clear 20 %
    assert chosen_member("lean", {"lean": 0.0, "learned:a": 0.0}, ["learned:a"]) == "lean"  # ties go to the heuristic


def test_with_resolved_leads_a_candidate_is_the_member_only_where_its_paired_interval_lies_above_zero():
    blocking = {"lean": 0.5, "learned:a": 0.45, "learned:b": 0.4}
    unresolved = {"learned:a": (0.05, 0.01), "learned:b": (0.1, 0.12)}  # b leads more on average, but its interval spans 0
    assert chosen_member("lean", blocking, ["learned:a", "learned:b"]) == "learned:b"  # the means alone
    assert chosen_member("lean", blocking, ["learned:a", "learned:b"], leads=unresolved) == "learned:a"
    assert chosen_member("lean", blocking, ["learned:b"], leads=unresolved) == "lean"
    assert chosen_member("lean", blocking, ["learned:a"], leads={"learned:a": (0.05, float("nan"))}) == "lean"  # one stream: undefined
    assert chosen_member("lean", blocking, ["learned:a"], margin=0.2, leads=unresolved) == "lean"  # resolved, but under the margin


def test_a_candidates_lead_is_paired_stream_by_stream_with_the_families_best():
    from placer.policies.teachers import _scored

    rows = regimes(CONFIG)[1:]  # load 1.3
    (family_best, blocking, leads), _ = _scored(CONFIG, rows, candidates=("fixed:1", "lean:admit=0.5"))
    fixed, best_member = make_heuristic("fixed:1", max_degree=16), make_heuristic(family_best, max_degree=16)
    paired = [a - b for a, b in zip(_per_stream(CONFIG, rows[0], best_member), _per_stream(CONFIG, rows[0], fixed), strict=True)]
    assert leads["fixed:1"] == mean_ci95(paired) and leads["fixed:1"][1] > 0
    assert leads["fixed:1"][0] == pytest.approx(blocking[family_best] - blocking["fixed:1"])
    scores: dict = {}
    regime_members(CONFIG.with_changes(loads=(1.3,)), candidates=("fixed:1",), resolved=True, scores=scores)
    (group,) = scores.values()
    assert (group["fixed:1 lead"], group["fixed:1 lead half"]) == leads["fixed:1"]


def test_the_families_tuning_kept_by_one_stage_serves_the_next_on_the_same_streams(tmp_path, monkeypatch):
    """A recipe's distil stage scores its candidate beside the clone's tuning of the families: read back from the file,
    the same members, scores and leads as a fresh tuning, and no family runs again; other streams are tuned anew."""
    import placer.policies.teachers as teachers

    config = CONFIG.with_changes(loads=(0.5, 1.3))
    kept = teachers.FamilyTunings(tmp_path / "tuning.json")
    first = regime_members(config, tuned=kept)  # the clone: the families alone
    fresh_scores: dict = {}
    fresh = regime_members(config, candidates=("fixed:1",), scores=fresh_scores)
    real = teachers._families
    monkeypatch.setattr(teachers, "_families", lambda *a: pytest.fail("a kept group was tuned again"))
    scores: dict = {}
    again = regime_members(config, candidates=("fixed:1",), scores=scores, tuned=teachers.FamilyTunings(tmp_path / "tuning.json"))
    assert again == fresh and scores == fresh_scores and set(first) == set(again)
    making = teachers.make_policy  # the candidate's scores were kept with the group: a resume, or a run with another
    monkeypatch.setattr(teachers, "make_policy", lambda *a: pytest.fail("a kept candidate was scored again"))  # margin
    kept_scores: dict = {}
    kept = teachers.FamilyTunings(tmp_path / "tuning.json")
    assert regime_members(config, candidates=("fixed:1",), scores=kept_scores, tuned=kept) == fresh and kept_scores == fresh_scores
    monkeypatch.setattr(teachers, "make_policy", making)
    tuned: list = []
    monkeypatch.setattr(teachers, "_families", lambda *a: tuned.append(1) or real(*a))
    other = config.with_changes(loads=(0.9,))  # other streams: tuned, and added to the file
    regime_members(other, tuned=teachers.FamilyTunings(tmp_path / "tuning.json"))
    assert len(tuned) == 1 and len(teachers.FamilyTunings(tmp_path / "tuning.json")._kept) == 3
    row = regimes(config)[:1]
    assert teachers.group_digest(config, row) != teachers.group_digest(config.with_changes(max_degree=8), row)


def _per_stream(config, row, policy) -> tuple[float, ...]:
    from placer.policies.teachers import _tuning, variant_of

    workload = variant_of(config, row).workload
    cost = CostModel(load_cluster(row.cluster), strategy=config.strategy)
    return _tuning(row, workload, cost, [resolve_graph(g) for g in workload.graphs]).per_stream(policy, TUNING_METRIC)


def _tuning_blocking(config, row, policy) -> float:
    from placer.policies.teachers import _tuning, variant_of

    workload = variant_of(config, row).workload
    cost = CostModel(load_cluster(row.cluster), strategy=config.strategy)
    return _tuning(row, workload, cost, [resolve_graph(g) for g in workload.graphs]).blocking(policy, TUNING_METRIC)


def test_a_learned_candidate_teaches_the_regimes_it_is_chosen_for():
    pytest.importorskip("torch")
    from placer import envs
    from placer.policies.imitation import teacher_action
    from placer.policies.loading import LearnedPolicy

    low, high = (r.key for r in regimes(CONFIG))
    teachers = Teachers("best", 16, {low: "lean", high: DEFAULT})
    low_info, high_info = (r.as_info() for r in regimes(CONFIG))
    assert teachers.for_episode(high_info).name == DEFAULT and teachers.for_episode(low_info).name == "lean"
    by_table = collect(CONFIG, "best", 1, seed=3, members={low: DEFAULT, high: DEFAULT})  # its first episode
    env, learned = envs.ClusterPlacementEnv(CONFIG), LearnedPolicy.from_file(DEFAULT_FILE)
    env.reset(seed=3)
    learned.reset(np.random.default_rng(3))
    actions, done = [], False
    while not done:
        offer, mask = env.offer, env.action_masks()
        action = teacher_action(learned.decide(offer.job, offer.view), offer.options)
        if mask.sum() > 1:
            actions.append(action)
        done = env.step(action)[2]
    assert list(by_table.actions) == actions and len(set(actions)) > 1


def test_teacher_candidates_need_a_teacher_tuned_per_regime_and_policy_names():
    from placer.common.errors import PlacerError
    from placer.policies.config import TrainConfig, TrainSection

    env = CONFIG
    with pytest.raises(PlacerError, match="not tuned per regime"):
        TrainConfig(env=env, train=TrainSection(imitation_teacher="lean", teacher_candidates=[DEFAULT]))
    with pytest.raises(PlacerError):
        TrainConfig(env=env, train=TrainSection(imitation_teacher="best", teacher_candidates=["nonsense:3"]))
    from placer.policies.teachers import check_baseline_early

    unknown = TrainConfig(env=env, train=TrainSection(imitation_teacher="best", teacher_candidates=["learned:nosuch"]))
    with pytest.raises(PlacerError, match="unknown policy 'learned:nosuch'"):  # before any tuning, not in a worker after it
        check_baseline_early(unknown)


def test_elastic_best_is_tuned_per_regime_among_the_elastic_families_and_its_members_resize_in_the_recording():
    from placer.baselines.best import ELASTIC_CANDIDATES
    from placer.policies.teachers import _tuning, variant_of

    config = CONFIG.with_changes(elastic=True, loads=(0.9,), graphs=("alexnet", "vgg16", "resnet18", "gnmt"), max_nodes=512, max_edges=1024)
    scores: dict = {}
    members = regime_members(config, teacher="elastic-best", scores=scores)
    (member,) = set(members.values())
    (group,) = scores.values()
    (row,) = regimes(config)
    workload = variant_of(config, row).workload
    tuning = _tuning(row, workload, CostModel(load_cluster(row.cluster)), [resolve_graph(g) for g in workload.graphs])
    evaluated = make_heuristic("elastic-best", max_degree=config.max_degree).tuned(tuning)  # placer evaluate's choice
    assert member in ELASTIC_CANDIDATES and member == evaluated.chosen and group == {member: evaluated.tuning_blocking[member]}
    assert tuned_per_regime("elastic-best") and not set(ELASTIC_CANDIDATES) & set(BEST_CANDIDATES)  # not best's families
    grows = {key: "elastic_lean" for key in members}  # an elastic member (on these short streams Chronus wins)
    data = collect(config, "elastic-best", 60, seed=1, members=grows)
    resized = data.dynamic["resize"][:, 0] == 1
    assert (data.actions[resized] != 0).any()  # the episode's member grows running jobs


def test_on_a_cluster_file_the_teachers_find_it_by_its_path_though_regimes_name_it():
    """Regimes and an env's reset info name a cluster file by the name inside it, which load_cluster cannot read: the
    tuning's digest and a learned member's episodes map it back (``placer train --cluster my.toml`` failed in both)."""
    pytest.importorskip("torch")
    from pathlib import Path

    from placer.policies.teachers import group_digest

    mine = str(Path(__file__).with_name("team4x4.toml"))
    config = CONFIG.with_changes(clusters=(mine,), loads=(0.9,))
    (row,) = regimes(config)
    assert row.cluster == "team4x4"
    assert group_digest(config, [row]) != group_digest(CONFIG.with_changes(loads=(0.9,)), regimes(CONFIG.with_changes(loads=(0.9,))))
    teachers = Teachers("best", 16, {row.key: DEFAULT}, clusters=config.all_clusters)
    assert teachers.for_episode(row.as_info()).name == DEFAULT


def test_a_beta_distribution_weighed_twice_in_training_is_validated_once():
    from placer.policies.validation import validation_configs

    (evaluation,) = validation_configs(CONFIG.with_changes(beta_dists=("A", "D", "D")), 2, "lean")
    assert evaluation.workload.beta_dists == ("A", "D")  # D's streams once: no interval narrower than its streams warrant
