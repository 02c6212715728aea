"""Every benchmark script runs in its smoke mode (tiny sizes, nothing timed worth reading), so none can rot unnoticed."""

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
