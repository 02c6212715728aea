import json

from placer.cli.figures.elastic import elastic_table


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
