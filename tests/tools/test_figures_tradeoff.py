import json

from tools.figures.tradeoff import frontier, pooled, tradeoff


def test_the_frontier_keeps_what_nothing_beats_on_both_by_rising_jct():
    points = {"a": (0.1, 100.0), "b": (0.2, 50.0), "c": (0.2, 200.0), "d": (0.1, 100.0), "e": (0.15, 100.0)}
    assert frontier(points) == ["b", "a", "d"]  # c and e are beaten by a on both (or on one, level on the other)


def test_the_table_names_the_fastest_the_best_within_the_budget_and_the_least_blocking(tmp_path):
    runs = [
        {"policy": "para_max", "avoidable_blocking_rate": 0.25, "mean_jct_s": 70.0},
        {"policy": "para_max", "avoidable_blocking_rate": 0.05, "mean_jct_s": 90.0},
        {"policy": "fixed:8", "avoidable_blocking_rate": 0.12, "mean_jct_s": 100.0},  # within 1.25 x 80 s
        {"policy": "learned", "avoidable_blocking_rate": 0.05, "mean_jct_s": 320.0},
    ]
    assert pooled(runs)["para_max"] == (0.15, 80.0)  # means over its runs
    source = tmp_path / "docs" / "results" / "families"  # another figure's result folder (not registered: in docs/results)
    source.mkdir(parents=True)
    (source / "results.json").write_text(json.dumps({"runs": runs}))
    (source / "figure.json").write_text(json.dumps({"commands": ["placer evaluate --cluster dgx8x8"]}))
    (tmp_path / "docs" / "results" / "tradeoff").mkdir()
    rendered = tradeoff({"dgx8x8": "families"}, "docs/t.png")(tmp_path / "docs" / "results" / "tradeoff")
    row = "| dgx8x8 | `para_max`, 80 | `fixed:8`, 0.120 | `learned`, 0.050 at 320 (4.0x) | "
    assert row + "`para_max` (0.150, 80), `fixed:8` (0.120, 100), `learned` (0.050, 320) |" in rendered.markdown
    assert list(rendered.images) == ["docs/t.png"]
