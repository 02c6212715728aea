import json

import pytest

from tools.figures.core import FigureError
from tools.figures.elastic import admission_table, elastic_table


def _run(policy, seed, avoidable, jct, load=0.9, resizes=0):
    run = {"policy": policy, "seed": seed, "beta_dist": "A", "load": load, "avoidable_blocking_rate": avoidable, "mean_jct_s": jct}
    return run | ({"resizes": resizes} if policy in ("elasticflow", "chronus", "elastic_lean") else {})


def _field(seed):
    return [
        _run("elasticflow", seed, 0.07, 60.0),
        _run("chronus", seed, 0.1 * seed, 400.0),
        _run("elastic_lean", seed, 0.06, 90.0, resizes=10 + seed),
    ]


def test_the_elastic_table_pairs_each_policy_with_best_and_shows_its_mean_jct_beside(tmp_path):
    results = tmp_path / "docs" / "results"
    families, learned, elastic = results / "families", results / "learned", results / "elastic"
    for folder, runs, command in (
        (families, [*(_run("best", s, 0.06 + 0.02 * s, 100.0) for s in (0, 1)), _run("para_max", 0, 0.5, 1.0)], "A"),
        (learned, [_run("learned:x", s, 0.05 + 0.02 * s, 300.0 + s) for s in (0, 1)], "B"),
        (elastic, [*_field(0), *_field(1)], "C"),
    ):  # fmt: skip
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"runs": runs}))
        (folder / "figure.json").write_text(json.dumps({"commands": [f"placer evaluate {command}"]}))
    files = {"dgx8x8, Poisson": ("families/results.json", "learned/results.json", "elastic/results.json")}
    markdown = elastic_table(files, "learned:x")(elastic).markdown
    assert markdown.startswith("    placer evaluate A\n    placer evaluate B\n    placer evaluate C\n\n")
    assert "| evaluation | load | best | learned:x | elasticflow | chronus | elastic_lean |" in markdown
    # best 0.06, 0.08: learned 0.01 under on each seed; elasticflow +0.01 and -0.01; chronus -0.06 and +0.02
    row = "| dgx8x8, Poisson | 0.9 | 0.070, 100 s | 0.060 (-0.010 ± 0.000), 300 s | 0.070 (+0.000 ± 0.127), 60 s, 0 resizes |"
    assert row + " 0.050 (-0.020 ± 0.508), 400 s, 0 resizes | 0.060 (-0.010 ± 0.127), 90 s, 10 resizes |" in markdown
    assert "para_max" not in markdown


def test_the_admission_table_sums_each_policys_admitted_jobs_over_seeds_and_divides_by_best(tmp_path):
    admitted = {"para_min": 60, "lean": 62, "best": 64, "fixed:8": 50, "chronus": 66, "elasticflow": 80, "elastic_lean": 72}
    admitted["elastic_lean:shrink=all"] = 76
    runs = [
        {"policy": p, "seed": s, "beta_dist": "A", "load": load, "jobs": 100, "accepted": n // 2 + s - (load > 1),
         "avoidable_blocking_rate": 0.1 * s + (0.3 if load > 1 else 0.0) + 0.001 * i}
        for load in (0.9, 1.5) for i, (p, n) in enumerate(admitted.items()) for s in (0, 1)
    ]  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps({"runs": runs}))
    (tmp_path / "figure.json").write_text(json.dumps({"commands": ["placer evaluate X"]}))
    markdown = admission_table("results.json")(tmp_path).markdown
    assert markdown.startswith("    placer evaluate X\n\nJobs admitted out of 200 a load:\n\n| load | para_min | lean | best | fixed:8 |")
    # each policy admits n // 2 and n // 2 + 1 at 0.9 (n + 1 in all), one fewer on each seed at 1.5 (n - 1); the shares
    # blocked are best's, chronus's, elasticflow's, elastic_lean's and shrink=all's (policies 2, 4, 5, 6, 7: + 0.001 each)
    assert "| 0.9 | 61 | 63 | 65 | 51 | 67 | 81 | 73 | 77 | 1.25 | 1.12 | 1.18 | 0.052, 0.054, 0.055, 0.056, 0.057 |" in markdown
    assert "| 1.5 | 59 | 61 | 63 | 49 | 65 | 79 | 71 | 75 | 1.25 | 1.13 | 1.19 | 0.352, 0.354, 0.355, 0.356, 0.357 |" in markdown
    for run in runs:
        run["accepted"] = 0 if run["policy"] == "best" else run["accepted"]
    (tmp_path / "results.json").write_text(json.dumps({"runs": runs}))
    assert "| 0.9 | 61 | 63 | 0 | 51 | 67 | 81 | 73 | 77 | - | - | - |" in admission_table("results.json")(tmp_path).markdown
    (tmp_path / "results.json").write_text(json.dumps({"runs": [r for r in runs if r["policy"] != "chronus"]}))
    with pytest.raises(FigureError, match="no runs of chronus"):
        admission_table("results.json")(tmp_path)
