"""Every ```python block of the README runs as written, on its own, in a fresh interpreter: saved as a script and run
with ``python block.py``, and pasted into ``python`` (its interactive loop, which reads the block statement by statement:
a blank line ends an indented block there, and an error does not stop it, so its messages are what tells)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RAY

REPO = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), flags=re.S | re.M)
FAILED = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(Error|Exception)\b")  # also one logged, not raised
TIMEOUT_S = 300


def run_block(code: str, folder: Path, *, pasted: bool) -> subprocess.CompletedProcess[str]:
    """``code`` saved as ``folder/block.py`` and run as a script, or fed to the interactive loop of ``python`` (``pasted``)."""
    script = folder / "block.py"
    script.write_text(code)
    env = {**os.environ, "PYTHON_BASIC_REPL": "1"}  # Python 3.13+: the classic loop, as a terminal's paste reaches it
    if not pasted:
        return subprocess.run([sys.executable, str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    with script.open() as stdin:
        return subprocess.run([sys.executable, "-i"], stdin=stdin, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2  # the pattern still finds them
    assert any("placer.ray" in code for code in BLOCKS)  # the Ray block among them: saved as a script it needs its guard


def test_the_checks_see_a_failure(tmp_path):
    """The checks can fail: a block pasted with a blank line inside a function fails (and the loop exits 0)."""
    pasted = run_block("def f():\n    x = 1\n\n    return x\n", tmp_path, pasted=True)
    assert pasted.returncode == 0 and FAILED.search(pasted.stderr)


@pytest.mark.parametrize(
    "code",
    [pytest.param(code, marks=[pytest.mark.xdist_group(RAY)] if "placer.ray" in code else []) for code in BLOCKS],
    ids=[f"block{i}" for i in range(len(BLOCKS))],
)
def test_readme_block_runs(code, tmp_path):
    script = run_block(code, tmp_path, pasted=False)
    assert script.returncode == 0, script.stderr[-2000:]
    assert not FAILED.search(script.stderr), script.stderr[-2000:]
    pasted = run_block(code, tmp_path, pasted=True)
    assert not FAILED.search(pasted.stderr), pasted.stderr[-2000:]
    # pasted code prints what the script prints, and the loop adds the values of expression statements: a script that
    # prints more ran some of its code twice (a spawned process imports the script again unless it is guarded by
    # ``if __name__ == "__main__":``)
    assert len(script.stdout.splitlines()) <= len(pasted.stdout.splitlines()), (script.stdout[-2000:], pasted.stdout[-2000:])


@pytest.mark.parametrize(("document", "most"), [("README.md", 250), ("docs/learning.md", 400)])
def test_a_newcomer_reads_it_in_ten_minutes(document, most):
    """Issue 50's bar: the README within 250 lines, the learning document within 400 (a figure that grows breaks it)."""
    lines = len((REPO / document).read_text().splitlines())
    assert lines <= most, f"{document}: {lines} lines, the bar is {most}"
