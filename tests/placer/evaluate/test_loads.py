"""Load as an axis: each load of a multi-load evaluation runs the streams of an evaluation of that load alone."""

import pytest

from placer.evaluate import EvaluationConfig, evaluate, tasks

BASE = {
    "cluster": "dgx8x8",
    "graphs": ["alexnet", "resnet18"],
    "beta_dists": ["C"],
    "jobs": 25,
    "seeds": 2,
    "policies": ["para_max", "lean"],
    "queue": "edf-bf",
    "size": "loguniform:0.1:10",
}


def test_each_load_equals_a_single_load_evaluation():
    several = evaluate(EvaluationConfig(**BASE, load=0.5, loads=(0.5, 1.3)))
    alone = evaluate(EvaluationConfig(**BASE, load=1.3))
    assert [r["load"] for r in several.runs] == [0.5] * 4 + [1.3] * 4
    assert [r for r in several.runs if r["load"] == 1.3] == alone.runs
    rows = several.summary()
    assert [(r["load"], r["policy"]) for r in rows] == [(0.5, "para_max"), (0.5, "lean"), (1.3, "para_max"), (1.3, "lean")]
    assert rows[2]["blocking_rate"] == alone.summary()[0]["blocking_rate"]
    # paired over one load, and pooled over both (paired by load and seed)
    one = alone.paired("para_max", "lean", "C")
    assert several.paired("para_max", "lean", "C", load=1.3) == one
    pooled = [a["blocking_rate"] - b["blocking_rate"] for a, b in zip(several.runs[0::2], several.runs[1::2], strict=True)]
    assert several.paired("para_max", "lean", "C")[0] == pytest.approx(sum(pooled) / 4)


def test_tasks_go_load_by_load_and_loads_are_checked():
    config = EvaluationConfig(**BASE, loads=(0.5, 0.9, 1.3))
    assert [t.load_index for t in tasks(config)] == [0] * 4 + [1] * 4 + [2] * 4
    assert config.workload_at(2).load == 1.3 and config.workload_at(1) == config.workload  # the workload's own load: 0.9
    for bad in [(0.5, 0.5), (0.5, -1.0)]:
        with pytest.raises(ValueError, match="distinct positive"):
            EvaluationConfig(**BASE, loads=bad)


def test_a_replayed_trace_takes_no_list_of_loads():
    with pytest.raises(ValueError, match="takes no list of loads"):
        EvaluationConfig(cluster="dgx8x8", seeds=1, policies=["lean"], trace="t.csv", loads=(0.5, 0.9), workload={})


def test_a_beta_distributions_streams_do_not_depend_on_its_place_in_the_list():
    from placer.evaluate.runner import Runner

    def stream(betas: list[str], index: int) -> list[tuple]:
        runner = Runner(EvaluationConfig(cluster="pacml", seeds=1, policies=["lean"], jobs=20, beta_dists=betas))
        return [(j.arrival_s, j.graph.key, j.beta, j.iterations) for j in runner.jobs(index, seed=3)]

    assert stream(["C"], 0) == stream(["A", "B", "C", "D"], 2) != stream(["A", "B", "C", "D"], 0)  # A-D keep keys 0-3
    assert stream(["const:0.5", "uniform:0.2:0.4"], 1) == stream(["uniform:0.2:0.4"], 0)


def test_single_best_is_one_member_for_every_load_and_adaptive_is_tuned_on_every_load():
    config = EvaluationConfig(**{**BASE, "jobs": 40, "seeds": 1, "policies": ["best", "single-best", "adaptive"]}, loads=(0.4, 1.6))
    result = evaluate(config)
    stats = {(r["policy"], r["load"]): r["policy_stats"] for r in result.runs}
    best = [stats["best", load] for load in (0.4, 1.6)]
    single = [stats["single-best", load] for load in (0.4, 1.6)]
    assert single[0]["chosen"] == single[1]["chosen"]  # one configuration for every regime
    pooled = {name: (best[0]["tuning_blocking"][name] + best[1]["tuning_blocking"][name]) / 2 for name in best[0]["tuning_blocking"]}
    assert single[0]["tuning_blocking"] == pytest.approx(pooled) and single[0]["chosen"] == min(pooled, key=pooled.get)
    table = stats["adaptive", 0.4]["table"]
    assert stats["adaptive", 1.6]["table"] == table and [member for _, member in table] == [b["chosen"] for b in best]
    assert table[0][0] < table[1][0]  # the meter reads the higher load higher
