"""Labelled policy files side by side, recorded by sha256, and never merged silently with another policy of the same
name (issue 53, item 3)."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from placer.cli import app
from placer.common.errors import PolicyError
from placer.common.shipped import shipped_policy_file
from placer.evaluate import EvaluationConfig, EvaluationResult, evaluate, merge_results, read_results
from placer.evaluate.jobs import read_jobs
from tests.placer.evaluate.test_jobs import LEAN, PARA_MIN, hand_built


def config(*policies: str, policy_file: str | None = None) -> EvaluationConfig:
    return EvaluationConfig.model_validate(
        {"cluster": "dgx8x8", "policies": list(policies), "seeds": 1, "workload": {"jobs": 3}, "policy_file": policy_file}
    )


def test_a_label_names_a_policy_in_the_results_and_the_config_keeps_what_it_stands_for():
    labelled = config("best", "learned=mine:runs/a/policy.pt", "learned=theirs:b.pt", "learned:pacml", "learned")
    assert labelled.policies == ["best", "mine", "theirs", "learned:pacml", "learned"]
    assert labelled.labels == {"mine": "learned:runs/a/policy.pt", "theirs": "learned:b.pt"}
    assert labelled.spec_of("mine") == "learned:runs/a/policy.pt" and labelled.spec_of("best") == "best"
    assert EvaluationConfig.model_validate(labelled.model_dump()) == labelled  # as results.json keeps it, read back


@pytest.mark.parametrize(
    ("policies", "message"),
    [
        (["learned=mine:a.pt", "learned=mine:b.pt"], "label 'mine' is given twice"),
        (["lean", "lean"], "policy 'lean' is named twice: label one"),
        (["learned=lean:a.pt"], "label 'lean' in 'learned=lean:a.pt' is the name of a policy"),
        (["learned=2nd:a.pt"], "bad label '2nd'"),
        (["learned=:a.pt"], "bad label ''"),
    ],
)
def test_labels_that_would_confuse_are_refused_in_one_line(policies, message):
    with pytest.raises(PolicyError, match=message):
        config(*policies)


def test_a_file_of_ones_own_is_hashed_into_the_results():
    from placer.evaluate.identity import policy_file, policy_files

    evaluated = config("lean", "learned=mine:runs/a/policy.pt", "learned:pacml", "learned", policy_file="runs/b/policy.pt")
    assert [str(policy_file(evaluated, p)) for p in evaluated.policies[1:]] == [
        "runs/a/policy.pt",
        str(shipped_policy_file("pacml")),
        "runs/b/policy.pt",
    ]
    assert policy_file(evaluated, "lean") is None
    shipped = shipped_policy_file("pacml")
    assert policy_files(evaluated) == {"learned:pacml": {"file": str(shipped), "sha256": hashlib.sha256(shipped.read_bytes()).hexdigest()}}


def learned(policy_file: str, sha256: str | None, blocking: float, name: str = "learned") -> EvaluationResult:
    evaluated = config("lean", name, policy_file=policy_file)
    files = {evaluated.policies[1]: {"file": policy_file, "sha256": sha256}} if sha256 else {}
    rates = zip(evaluated.policies, (0.5, blocking), strict=True)
    runs = [{"policy": p, "seed": 0, "beta_dist": "A", "blocking_rate": b} for p, b in rates]
    return EvaluationResult(evaluated, runs, policy_files=files)


def test_one_path_holding_two_policies_is_reported_twice_by_content():
    retrained = merge_results([learned("a/policy.pt", "1" * 64, 0.1), learned("a/policy.pt", "2" * 64, 0.7)], labels=["a", "b"])
    assert retrained.config.policies == ["lean", "learned[a]", "learned[b]"]
    assert [(r["policy"], r["blocking_rate"]) for r in retrained.runs] == [("lean", 0.5), ("learned[a]", 0.1), ("learned[b]", 0.7)]
    (note,) = retrained.notes
    assert note == (
        "learned was evaluated with a different policy file in each evaluation: reported apart, as "
        "learned[a] (a/policy.pt, sha256 111111111111), learned[b] (a/policy.pt, sha256 222222222222)"
    )
    assert retrained.policy_files["learned[b]"]["sha256"] == "2" * 64
    copied = merge_results([learned("a/policy.pt", "1" * 64, 0.1), learned("b/copy.pt", "1" * 64, 0.7)])  # one content: one policy
    assert copied.config.policies == ["lean", "learned"] and copied.notes == [] and [r["blocking_rate"] for r in copied.runs] == [0.5, 0.1]


def test_one_label_for_two_policies_is_reported_twice():
    a, b = learned("x", None, 0.1, "learned=mine:a/policy.pt"), learned("x", None, 0.7, "learned=mine:b/policy.pt")
    merged = merge_results([a, b], labels=["a", "b"])
    assert merged.config.policies == ["lean", "mine[a]", "mine[b]"]
    assert merged.config.labels == {"mine[a]": "learned:a/policy.pt", "mine[b]": "learned:b/policy.pt"}
    assert merged.notes == [
        "mine names a different policy in each evaluation: reported apart, as mine[a] (learned:a/policy.pt), mine[b] (learned:b/policy.pt)"
    ]


def test_the_per_job_tables_follow_the_merge(tmp_path):
    runs = {"lean": LEAN, "learned": PARA_MIN}
    hand_built(tmp_path / "a", runs, {"learned": {"file": "p.pt", "sha256": "1" * 64}}, policy_file="p.pt")
    hand_built(tmp_path / "b", runs, {"learned": {"file": "p.pt", "sha256": "2" * 64}}, policy_file="p.pt")
    loaded = [read_results(json.loads((tmp_path / f / "results.json").read_text()), tmp_path / f) for f in "ab"]
    merged = merge_results(loaded, labels=["a", "b"])
    rows = [(r["policy"], r["job"]) for r in read_jobs(merged.jobs)]
    assert rows == [(p, str(j)) for p in ("lean", "learned[a]") for j in range(3)] + [("learned[b]", str(j)) for j in range(3)]


def test_report_keeps_apart_two_policies_of_one_name_where_it_took_the_first(tmp_path):
    """Before: ``learned`` of the second folder (a file retrained in place: same path, other content) vanished silently."""
    runs = {"lean": LEAN, "learned": PARA_MIN}
    hand_built(tmp_path / "a", runs, {"learned": {"file": "p.pt", "sha256": "1" * 64}}, policy_file="p.pt")
    hand_built(tmp_path / "b", {"lean": LEAN, "learned": LEAN}, {"learned": {"file": "p.pt", "sha256": "2" * 64}}, policy_file="p.pt")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--against", "lean", "--jobs"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "note: learned was evaluated with a different policy file in each evaluation: reported apart, as learned[a]" in text
    jobs, why = result.output.split("Per job, over every completed job")[1].split("Blocking rate minus lean's")[0].split("Why the blocked")
    assert "| learned[a] | 1 | 2 | 30.0 | 30.0 | 30.0 |" in jobs and "| learned[b] | 2 | 1 | 25.0 | 29.0 | 29.9 |" in jobs
    assert [line.split(" | ")[0] for line in jobs.splitlines() if line.startswith("| l")] == ["| lean", "| learned[a]", "| learned[b]"]
    assert "| lean | 1 | 0 | 1 |" in why and "| learned[a] | 2 | 1 | 1 |" in why and "| learned[b] | 1 | 0 | 1 |" in why


def test_report_prints_the_percentiles_and_draws_the_cdfs(tmp_path):
    hand_built(tmp_path / "ev")
    png = tmp_path / "cdf.png"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "ev"), "--jobs", "--plot-cdf", str(png)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("| ")]
    header = "| policy | completed | blocked | JCT p50 (s) | JCT p90 (s) | JCT p99 (s) | wait p50 (s) | wait p90 (s) | wait p99 (s) "
    assert header + "| slowdown p50 | slowdown p90 | slowdown p99 |" in lines
    assert "| lean | 2 | 1 | 25.0 | 29.0 | 29.9 | 5.0 | 9.0 | 9.9 | 2.50 | 2.90 | 2.99 |" in lines
    assert "| para_min | 1 | 2 | 30.0 | 30.0 | 30.0 | 0.0 | 0.0 | 0.0 | 3.00 | 3.00 | 3.00 |" in lines
    assert png.read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "ev" / "jobs.csv").unlink()
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "ev"), "--jobs"])
    assert "is missing: its results.json names it" in str(missing.exception)


def test_two_labelled_policy_files_in_one_real_evaluation(tmp_path):
    placer, pacml = shipped_policy_file("placer"), shipped_policy_file("pacml")
    evaluated = EvaluationConfig(
        cluster="dgx8x8",
        graphs=["alexnet", "gnmt"],
        beta_dists=["A"],
        jobs=10,
        seeds=1,
        policies=["lean", f"learned=mine:{placer}", f"learned=theirs:{pacml}"],
    )
    result = evaluate(evaluated, jobs=tmp_path / "jobs.csv")
    assert [r["policy"] for r in result.runs] == ["lean", "mine", "theirs"]
    assert {name: entry["sha256"] for name, entry in result.policy_files.items()} == {
        "mine": hashlib.sha256(placer.read_bytes()).hexdigest(),
        "theirs": hashlib.sha256(pacml.read_bytes()).hexdigest(),
    }
    assert [r["policy"] for r in read_jobs(result.jobs)] == ["lean"] * 10 + ["mine"] * 10 + ["theirs"] * 10


def test_a_policy_file_of_ones_own_that_is_not_there_is_one_line():
    from placer.baselines.registry import PolicyContext, make_policy
    from tests.placer.toys import toy_cluster

    with pytest.raises(PolicyError, match="policy file 'nowhere/policy.pt' does not exist"):
        make_policy("learned:nowhere/policy.pt", PolicyContext(toy_cluster(1, 2)))
