"""Lenient inputs that gave silently meaningless output now warn or refuse in one line (issue 53, item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from tests.placer.evaluate.test_sanity import tiny_cluster

CLI = [sys.executable, "-m", "placer"]


def run(*args, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--load", "1e9"], "error: --load 1e+09: an offered load is above 0 and below 100"),
        (["evaluate", "--load", "0.5,1e9"], "error: --load 1e+09: an offered load is above 0 and below 100"),
        (["bound", "--load", "1e9"], "error: --load 1e+09: an offered load is above 0 and below 100"),
        (["bound", "--load", "nan"], "error: --load nan: an offered load is above 0 and below 100"),
    ],
)
def test_an_absurd_load_is_one_line(args, message, tmp_path):
    result = run(*args, "--jobs", "5", "--seeds", "1", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [message + " (1.0 offers as much work as the cluster serves)"]
    assert not (tmp_path / "o").exists()


def test_an_evaluation_no_job_of_which_fits_says_why(tmp_path):
    args = ["--cluster", tiny_cluster(tmp_path), "--graphs", "alexnet", "--beta-dist", "A", "--jobs", "5", "--seeds", "1"]
    result = run("evaluate", *args, "--policies", "lean", "--out", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert line == (
        "warning: no policy served any job (blocking 1.000 and JCT nan everywhere): no device of cluster 'tiny' has memory for "
        "graph 'alexnet', nor any placement of up to 2 of them (its training state 2.26 GB, the largest device 0.001 GB)"
    )
    report = run("report", str(tmp_path / "ev"))  # the report of it says so too
    assert report.returncode == 0 and line in report.stderr


def test_report_keeps_a_learned_policy_of_two_files_apart(tmp_path):
    from placer.evaluate import EvaluationConfig, evaluate, write_results

    base = evaluate(
        EvaluationConfig(cluster="pacml", seeds=1, policies=["lean"], workload={"graphs": ["alexnet"], "beta_dists": ["A"], "jobs": 5})
    )
    for name, blocking in (("a", 0.1), ("b", 0.7)):
        write_results(base, tmp_path / name)
        path = tmp_path / name / "results.json"
        data = json.loads(path.read_text())
        data["record"]["config"] |= {"policies": ["lean", "learned"], "policy_file": f"{name}/policy.pt"}
        data["runs"].append(data["runs"][0] | {"policy": "learned", "blocking_rate": blocking})
        path.write_text(json.dumps(data))
    result = run("report", str(tmp_path / "a"), str(tmp_path / "b"), "--against", "lean")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (
        "note: learned was evaluated with a different policy file in each evaluation: reported apart, as "
        "learned[a] (a/policy.pt), learned[b] (b/policy.pt)"
    )
    rows = [line.strip(" |").split(" | ")[:2] for line in result.stdout.splitlines() if line.startswith("| learned")]
    assert rows == [
        ["learned[a]", "0.100 ± n/a"],
        ["learned[b]", "0.700 ± n/a"],
        ["learned[a]", "+0.100 ± n/a"],
        ["learned[b]", "+0.700 ± n/a"],
    ]
    ambiguous = run("report", str(tmp_path / "a"), str(tmp_path / "b"), "--against", "learned")
    assert ambiguous.returncode == 2 and "'learned' is not one of the evaluated policies: lean, learned[a], learned[b]" in ambiguous.stderr


FIRST_LINE_ONLY = """
import sys
from placer.cli import main
sys.argv = ["placer", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    lazy = ("placer.policies.loading", "matplotlib", "placer.calibration.checks", "placer.evaluate.sanity")
    heavy = [m for m in lazy if m in sys.modules]
    print(exc.code, heavy)
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["evaluate", "--policies", "lean,learned", "--policy-file", "missing.pt"],
            "Invalid value for '--policy-file': file 'missing.pt' does not exist",
        ),
        (["evaluate", "--trace", "missing.csv"], "Invalid value for '--trace': file 'missing.csv' does not exist"),
        (["evaluate", "--graphs-dir", "missing"], "Invalid value for '--graphs-dir': dir 'missing' does not exist"),
        (["evaluate", "--cluster", "missing.toml"], "cannot read cluster spec 'missing.toml'"),
        (["bound", "--cluster", "missing.toml"], "cannot read cluster spec 'missing.toml'"),
        (["calibrate", "missing.csv"], "Invalid value for 'measurements': file 'missing.csv' does not exist"),
        (["calibrate", "missing.csv", "--cluster", "missing.toml"], "cannot read cluster spec 'missing.toml'"),
        (["place", "alexnet", "--policy-file", "missing.pt"], "Invalid value for '--policy-file': file 'missing.pt' does not exist"),
        (["report", "missing"], "'missing' does not exist"),
    ],
)
def test_a_missing_input_file_is_one_line_before_anything_is_loaded(args, message, tmp_path):
    result = subprocess.run([sys.executable, "-c", FIRST_LINE_ONLY, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.stdout.strip() == "2 []", result.stdout  # status 2, no plug-in, plotting, fit or evaluation module loaded
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_bound_is_quiet_unless_verbose(tmp_path, capfd, monkeypatch):
    """HiGHS prints from C to the process's stdout (some lines whatever ``disp`` says) and scipy may warn: only --verbose shows them."""
    import os

    import scipy.optimize

    from placer.cli import app

    solve = scipy.optimize.milp

    def noisy(*args, **kwargs):
        os.write(1, b"HiGHS debug line\n")
        warnings.warn("solver warning", RuntimeWarning, stacklevel=1)
        return solve(*args, **kwargs)

    monkeypatch.setattr(scipy.optimize, "milp", noisy)
    args = ["bound", "--beta-dist", "A", "--jobs", "8", "--seeds", "1", "--time-limit", "5"]
    app([*args, "--out", str(tmp_path / "quiet")], standalone_mode=False)
    quiet = capfd.readouterr()
    assert "HiGHS" not in quiet.out + quiet.err and "solver warning" not in quiet.err and "best schedule blocking" in quiet.out
    with pytest.warns(RuntimeWarning, match="solver warning"):
        app([*args, "--out", str(tmp_path / "verbose"), "--verbose"], standalone_mode=False)
    verbose = capfd.readouterr()
    assert "HiGHS debug line" in verbose.out and "Running HiGHS" in verbose.out  # the solver's own log, disp on
