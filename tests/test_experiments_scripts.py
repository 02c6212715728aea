"""Every study script of experiments/studies/ (one-off analyses behind the docs' and the experiments' log's figures) runs in
its smoke mode (tiny sizes), so none can rot unnoticed; the regime scripts refuse bad input in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "experiments" / "studies"
SCRIPTS = sorted(p.name for p in STUDIES.glob("*.py"))


def test_every_study_is_listed():
    assert {"overrides.py", "hold_states.py", "departures.py", "fidelity.py"} <= set(SCRIPTS)
    assert not {p.name for p in (REPO / "benchmarks").glob("*.py")} & set(SCRIPTS)  # a script lives in one place


@pytest.mark.parametrize("script", SCRIPTS)
def test_study_smoke_mode_runs(script):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, f"experiments/studies/{script}", "--smoke"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a smoke run prints what it measured"


def _script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], cwd=STUDIES, env=env, capture_output=True, text=True, timeout=600)


def test_overrides_by_the_policys_own_placement_under_a_queue_gate():
    done = _script("overrides.py", "--smoke", "--by", "own", "--waiting", "3", "--first-seed", "7")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "its holds overridden by own while at most 3 jobs wait; Poisson, 1 seed from 7 x 30 jobs" in done.stdout


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("overrides.py", ("--waiting", "0"), "--waiting must be >= 1"),
        ("overrides.py", ("--first-seed", "9999", "--seeds", "2"), "--first-seed: seeds 0 to 9,999"),
        ("hold_states.py", ("--load", "nan"), "every --load a number > 0"),
        ("hold_states.py", ("--cluster", "bogus", "--seeds", "1", "--jobs", "5", "--load", "0.9"), "unknown cluster preset 'bogus'"),
    ],
)
def test_regime_scripts_refuse_bad_input_in_one_line(script, args, message):
    done = _script(script, *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
