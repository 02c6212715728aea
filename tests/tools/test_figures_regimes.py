import json

from tools.figures.regimes import regimes


def _run(policy, seed, avoidable, load=0.9, beta="A"):
    return {
        "policy": policy, "seed": seed, "beta_dist": beta, "load": load, "avoidable_blocking_rate": avoidable,
        "unavoidable_share": 0.2, "throughput_jobs_per_hour": 100.0 + seed, "mean_jct_s": 50.0,
    }  # fmt: skip


def test_the_regime_table_pairs_each_online_policy_with_best_and_pools_against_single_best(tmp_path):
    runs = [
        *(_run("single-best", s, 0.10) for s in (0, 1)),
        *(_run("best", s, 0.06 + 0.02 * s) for s in (0, 1)),  # 0.06, 0.08
        *(_run("adaptive", s, 0.07 + 0.02 * s) for s in (0, 1)),  # 0.01 above best on each seed
        *(_run("learned:pacml", s, 0.12) for s in (0, 1)),
        *(_run("para_max", s, 0.2) for s in (0, 1)),  # not shown
    ]
    results = tmp_path / "docs" / "results"  # the result folders of figures not registered
    source = results / "families"  # another figure's result folder, beside this one's
    source.mkdir(parents=True)
    (source / "results.json").write_text(json.dumps({"runs": runs}))
    (source / "figure.json").write_text(json.dumps({"commands": ["placer evaluate --cluster dgx8x8"]}))
    (results / "summary").mkdir()
    markdown = regimes({"dgx8x8, Poisson": ("families/results.json",)})(results / "summary").markdown
    assert markdown.startswith("    placer evaluate --cluster dgx8x8\n")
    assert "| evaluation | load | unavoidable | single-best | best | adaptive (minus best) | learned:pacml (minus best) |" in markdown
    assert "| dgx8x8, Poisson | 0.9 | 0.200 | 0.100 | 0.070 | 0.080 (+0.010 ± 0.000) | 0.120 (+0.050 ± 0.127) |" in markdown
    assert "| dgx8x8, Poisson | best | -0.030 ± 0.127 | -30% | 100.5 | 50 |" in markdown
    assert "para_max" not in markdown


def test_result_files_of_one_evaluation_pair_and_least_names_the_learned_policy_that_blocks_least(tmp_path):
    results = tmp_path / "docs" / "results"
    source = results / "tuning"
    source.mkdir(parents=True)
    first = [*(_run("single-best", s, 0.10) for s in (0, 1)), *(_run("best", s, 0.08) for s in (0, 1))]
    second = [*(_run("learned:a", s, 0.09) for s in (0, 1)), *(_run("learned:b", s, 0.07 + 0.02 * s) for s in (0, 1))]
    (source / "one.json").write_text(json.dumps({"runs": first}))
    (source / "two.json").write_text(json.dumps({"runs": second}))
    (source / "figure.json").write_text(json.dumps({"commands": ["placer evaluate A", "placer evaluate B"]}))
    (results / "summary").mkdir()
    render = regimes({"x": ("tuning/one.json", "tuning/two.json")}, least=True)
    markdown = render(results / "summary").markdown
    assert markdown.startswith("    placer evaluate A\n    placer evaluate B\n\n")  # the folder's commands, once
    assert "| x | 0.9 | 0.200 | 0.100 | 0.080 | 0.090 (+0.010 ± 0.000) | 0.080 (+0.000 ± 0.127) |" in markdown
    assert markdown.rstrip().endswith("(mean of the evaluations' means): `learned:b`, 0.0800.")
    assert "mean of the evaluations" not in regimes({"x": ("tuning/one.json", "tuning/two.json")})(results / "summary").markdown
    only = regimes({"x": ("tuning/one.json", "tuning/two.json")}, only=("single-best", "best", "learned:b"))
    assert "| evaluation | load | unavoidable | single-best | best | learned:b (minus best) |" in only(results / "summary").markdown


def test_the_wide_pooled_table_is_one_row_per_evaluation_with_a_column_per_policy(tmp_path):
    results = tmp_path / "docs" / "results"
    source = results / "families"
    source.mkdir(parents=True)
    runs = [*(_run("single-best", s, 0.10) for s in (0, 1)), *(_run("best", s, 0.06 + 0.02 * s) for s in (0, 1))]
    (source / "results.json").write_text(json.dumps({"runs": runs}))
    (source / "figure.json").write_text(json.dumps({"commands": ["placer evaluate --cluster dgx8x8"]}))
    (results / "summary").mkdir()
    markdown = regimes({"dgx8x8, Poisson": ("families/results.json",)}, wide=True)(results / "summary").markdown
    assert "| evaluation | single-best | best |" in markdown
    assert "| dgx8x8, Poisson | 0; 100/h; 50 s | -0.030 ± 0.127; 100/h; 50 s |" in markdown  # 100.5 jobs/h rounds to even
    assert "| dgx8x8, Poisson | best |" not in markdown  # not the long form
