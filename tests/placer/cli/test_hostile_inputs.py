"""Mistaken input found by an audit as a new user (2026-11-29): each is one line, a warning, or refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.evaluate.results import OUTCOMES_NAMED, runs_problem
from tests.placer.cli.test_honest_edges import run

SHIPPED = Path(__file__).resolve().parents[3] / "data" / "policies" / "placer.pt"
SMALL = ["--jobs", "5", "--seeds", "1", "--beta-dist", "C", "--graphs", "alexnet"]


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("hi\n")
    return path


@pytest.mark.parametrize("command", ["bound", "evaluate"])
def test_an_out_folder_that_is_a_file_or_under_one_is_refused_before_any_run(command, a_file):
    for out, says in ((a_file, "is a file"), (a_file / "x", f"is under {str(a_file)!r}, a file")):
        result = run(command, *SMALL, "--out", str(out))
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [f"error: --out {str(out)!r} {says}, not a folder"]
    assert a_file.read_text() == "hi\n"


@pytest.mark.parametrize(
    ("betas", "message"),
    [
        ("C,C", "error: beta distributions must be distinct: 'C' is given twice"),
        (
            "uniform:0.5:1,uniform:0.50:1.0",
            "error: beta distributions must be distinct: 'uniform:0.5:1' and 'uniform:0.50:1.0' are one distribution",
        ),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "bound"])
def test_a_beta_distribution_given_twice_is_refused_not_counted_as_more_seeds(command, betas, message, tmp_path):
    result = run(command, "--jobs", "5", "--seeds", "1", "--beta-dist", betas, "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and result.stderr.strip() == message
    assert not (tmp_path / "o").exists()


def test_an_error_quotes_the_input_as_typed_not_as_emoji(tmp_path):
    result = run("evaluate", *SMALL, "--policies", "fixed:100:x", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "'fixed:100:x'" in result.stderr and "\U0001f4af" not in result.stderr


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    """A small evaluation's folder."""
    out = tmp_path_factory.mktemp("ev") / "ev"
    result = run("evaluate", *SMALL, "--policies", "lean,para_max", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_report_refuses_a_cdf_plot_in_a_format_it_cannot_draw(evaluation, tmp_path):
    result = run("report", str(evaluation), "--plot-cdf", str(tmp_path / "out.txt"))
    assert result.returncode == 2
    bad = str(tmp_path / "out.txt")
    assert result.stderr.strip() == f"error: --plot-cdf {bad!r}: name a .png, .pdf, .svg file (its suffix is the format)"


def tampered(evaluation, tmp_path, change) -> str:
    data = json.loads((evaluation / "results.json").read_text())
    change(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    return str(tmp_path / "results.json")


@pytest.mark.parametrize(
    ("change", "args", "problem"),
    [
        (lambda d: d["runs"][0].update(blocking_rate="abc"), [], "run 0 (lean, beta C): blocking_rate is 'abc', not a number"),
        (lambda d: d["runs"][0].pop("blocking_rate"), [], "run 0 (lean, beta C) has no blocking_rate"),
        (lambda d: d.update(runs=[]), [], "holds no runs"),
        (
            lambda d: [run.pop("avoidable_blocking_rate") for run in d["runs"]],
            ["--outcomes"],
            f"its runs predate the outcome metrics ({OUTCOMES_NAMED}): evaluate again for --outcomes",
        ),
    ],
)
def test_report_says_in_one_line_what_is_wrong_with_a_results_file(evaluation, tmp_path, change, args, problem):
    path = tampered(evaluation, tmp_path, change)
    result = run("report", path, *args)
    assert result.returncode == 2 and result.stderr.strip() == f"error: {path}: {problem}"


def test_results_without_outcome_metrics_still_report_without_outcomes(evaluation, tmp_path):
    path = tampered(evaluation, tmp_path, lambda d: [run.pop("avoidable_blocking_rate") for run in d["runs"]])
    assert run("report", path, "--against", "lean").returncode == 0


@pytest.mark.parametrize(
    ("runs", "problem"),
    [
        ([], "holds no runs"),
        ({"policy": "lean"}, "holds no runs"),
        (["lean"], "run 0 names no policy and beta distribution"),
        ([{"policy": "lean", "beta_dist": "C", "blocking_rate": True}], "run 0 (lean, beta C): blocking_rate is True, not a number"),
    ],
)
def test_runs_problem_names_the_first_problem(runs, problem):
    assert runs_problem(runs) == problem


def test_a_policy_file_no_policy_reads_is_a_warning(evaluation, tmp_path):
    other = tmp_path / "notpolicy.pt"
    other.write_text("hello\n")
    result = run("evaluate", *SMALL, "--policies", "lean", "--policy-file", str(other), "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("warning: --policy-file")] == [
        f"warning: --policy-file {str(other)!r} is not read: no policy evaluated is a plain 'learned' "
        "(learned:NAME and learned=LABEL:PATH name their own)"
    ]
    shipped = run("evaluate", *SMALL, "--policies", "learned", "--policy-file", str(SHIPPED), "--out", str(tmp_path / "p"))
    assert shipped.returncode == 0 and "warning: --policy-file" not in shipped.stderr


def test_a_new_evaluation_removes_the_plots_of_an_earlier_one_in_its_folder(tmp_path):
    out = tmp_path / "ev"
    assert run("evaluate", *SMALL, "--load", "0.5,0.9", "--policies", "lean", "--out", str(out)).returncode == 0
    assert len(list(out.glob("load*.png"))) == 10  # the earlier evaluation's: five plots per load
    result = run("evaluate", *SMALL, "--load", "0.7", "--policies", "lean", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert not list(out.glob("load*.png")) and (out / "blocking_rate.png").is_file()
    (note,) = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith(f"note: removed 10 plots of an earlier evaluation in {str(out)!r} (load0.5_avoidable_blocking_rate.png")


def test_options_a_replayed_trace_replaces_are_refused_not_recorded_unused(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,graph,beta,iterations\n0,alexnet,0.5,100\n10,vgg16,0.5,100\n")
    extra = ["--jobs", "2", "--structure", "daily", "--beta-dist", "A,B"]
    result = run("evaluate", "--trace", str(trace), "--load", "1.3", *extra, "--policies", "lean", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and not (tmp_path / "o").exists()
    assert result.stderr.strip() == (
        "error: a replayed --trace has its own arrival times, job lengths and deadlines: drop --load, --jobs, --structure, --beta-dist"
    )
    plain = run("evaluate", "--trace", str(trace), "--load", "0.9", "--seeds", "1", "--policies", "lean", "--out", str(tmp_path / "p"))
    assert plain.returncode == 0, plain.stderr  # the defaults, given or not, are no conflict


@pytest.mark.parametrize(
    ("kind", "file", "args", "message"),
    [
        (
            "gavel",
            "gavel_msr_0e4a51.trace",
            ["--cluster", "nosuch"],
            "error: gavel's importer maps each job to its own model's graph: drop --cluster",
        ),
        (
            "philly",
            "philly_pollux.csv",
            ["--beta-dist", "A", "--seed", "3"],
            "error: philly's importer takes each job's deadline from its observed duration: drop --beta-dist, --seed",
        ),
    ],
)
def test_an_importer_refuses_the_options_it_does_not_read(kind, file, args, message, tmp_path):
    trace = SHIPPED.parents[1] / "traces" / file
    result = run("import", "trace", kind, str(trace), *args, "--out", str(tmp_path / "t.csv"))
    assert result.returncode == 2 and result.stderr.strip() == message and not (tmp_path / "t.csv").exists()
