"""What a new user hit in the first hour on main (issue 81): each now warns, says who won, or fits the terminal."""

from __future__ import annotations

import pytest

from tests.placer.cli.test_honest_edges import run

SMALL = ["--jobs", "5", "--seeds", "1", "--beta-dist", "C", "--graphs", "alexnet", "--cluster", "dgx8x8", "--queue", "edf-bf"]
OUTSIDE = (
    "warning: the shipped policy 'learned' was not trained on size const (its card placer.card.json: dgx8x8/mixed, "
    "size loguniform:0.1:10, queue edf-bf, load 0.5-1.3); --size loguniform:0.1:10 matches it"
)


@pytest.mark.parametrize(("size", "warned"), [([], True), (["--size", "loguniform:0.1:10"], False)])
def test_the_shipped_policy_outside_its_trained_sizes_says_so(size, warned, tmp_path):
    result = run("evaluate", *SMALL, *size, "--policies", "learned,lean", "--out", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    assert (OUTSIDE in result.stderr.splitlines()) is warned
    assert "not trained on" not in result.stderr or warned


def test_a_policy_file_of_ones_own_or_a_heuristic_alone_is_not_checked_against_the_card(tmp_path):
    result = run("evaluate", *SMALL, "--policies", "lean", "--out", str(tmp_path / "ev"))
    assert result.returncode == 0 and "not trained on" not in result.stderr


def test_the_readme_evaluates_the_shipped_policy_where_it_was_trained():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("placer evaluate") and "learned" in line]
    assert commands and all("--size loguniform:0.1:10" in c or "--policy-file" in c for c in commands)


def test_the_cards_trained_regimes_are_its_settings_merged_into_its_base():
    from placer.cli.trained import trained_regimes

    env = {"clusters": ["a"], "loads": [0.5, 1.3], "workload": {"size": ["loguniform:0.1:10"], "queue": ["edf-bf"]}}
    env["settings"] = [{}, {}, {"clusters": ["p"], "queue": "none", "size": "const", "loads": [0.9]}]
    regimes = trained_regimes({"teacher_table": {"tuned_for": {"env": env}}})
    assert regimes == [
        {"cluster": ["a"], "size": ["loguniform:0.1:10"], "queue": ["edf-bf"], "loads": [0.5, 1.3]},
        {"cluster": ["p"], "size": ["const"], "queue": ["none"], "loads": [0.9]},
    ]
    assert trained_regimes({}) == []
