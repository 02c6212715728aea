"""Every benchmark script (the product's speed and robustness) runs in its smoke mode (tiny sizes, nothing timed worth
reading), so none can rot unnoticed; the one-off studies of experiments/studies/ are tests/test_experiments_scripts.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (REPO / "benchmarks").glob("*.py"))


def test_every_benchmark_is_listed():
    assert "bench_decisions.py" in SCRIPTS and len(SCRIPTS) >= 9


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke_mode_runs(script):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--smoke"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a smoke run prints what it measured"


def _script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], cwd=REPO / "benchmarks", env=env, capture_output=True, text=True, timeout=600)


def test_training_ceiling_line_names_the_bound_the_environment_sets():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from bench_training import _ceiling
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    slow = _ceiling(1500.0, 600.0)
    assert slow.startswith("ceiling (the network free): 1500 timesteps/s, 0.50x issue 29's 3000: out of reach without a faster environment")
    assert slow.endswith("all but the environment is 60% of a step's time now")
    assert "reachable only with a faster network" in _ceiling(6000.0, 600.0)


def test_training_speed_of_a_recipe_times_its_first_rl_stage_and_a_bad_config_is_one_line(tmp_path):
    done = _script("bench_training.py", "--smoke", "--config", str(REPO / "data" / "configs" / "placer.toml"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "environment alone (random valid actions)" in done.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[train]\nno_such_key = 1\n")
    done = _script("bench_training.py", "--smoke", "--config", str(bad))
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert len(done.stderr.strip().splitlines()) == 1
