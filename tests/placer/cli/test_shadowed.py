"""Something named placer found before the package (issue 81, item 6): the ``placer`` command says so in one line and
exits with status 2, also where ``placer.cli`` itself cannot be imported (the command's entry point is not in it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def console_script(folder: Path) -> Path:
    """The ``placer`` script pip writes for pyproject's entry point (``from MODULE import FUNC``), in ``folder``."""
    module, _, func = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["placer"].partition(":")
    script = folder / "placer"
    script.write_text(f"import re\nimport sys\nfrom {module} import {func}\nif __name__ == '__main__':\n    sys.exit({func}())\n")
    return script


def run_script(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``script`` run from ``cwd`` as in a regular install whose ``PYTHONPATH`` starts with the current directory.

    ``-S``: no site hooks, so no editable install's import hook finds placer's modules whatever ``placer`` is; the
    checkout and this interpreter's path (its site-packages: the dependencies) come after ``.`` on ``PYTHONPATH``."""
    path = os.pathsep.join([".", str(REPO), *(p for p in sys.path if p and Path(p).resolve() != REPO)])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-S", str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("name", "what"), [("placer/__init__.py", "a folder named placer"), ("placer.py", "a file named placer.py")])
def test_a_placer_found_first_is_one_line_and_status_2_though_placer_cli_cannot_import(tmp_path, name, what):
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    (work / name).parent.mkdir(parents=True)
    (work / name).write_text("")
    done = run_script(console_script(bin_dir), work, "--version")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    found = work / ("placer" if name.startswith("placer/") else name)
    assert done.stderr.startswith(f"error: {what} ({found}) shadows the installed package, so placer cannot start: ")
    assert done.stderr.rstrip().endswith("run from another directory, rename it, or take its folder off PYTHONPATH")


@pytest.mark.parametrize("folder", [None, "placer"])
def test_the_command_runs_where_nothing_shadows_it(tmp_path, folder):
    """Nothing named placer, or a folder without ``__init__.py`` (a checkout named placer): Python prefers the package."""
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    if folder is not None:
        (work / folder).mkdir()
    done = run_script(console_script(bin_dir), work, "--version")
    assert done.returncode == 0 and done.stdout.startswith("placer "), done.stderr[-2000:]
    assert done.stderr == ""


def test_placers_own_import_error_is_raised_not_taken_for_a_shadow(monkeypatch):
    import placer_launch

    assert placer_launch.shadow_line() is None  # the package beside the launcher is found

    monkeypatch.setitem(sys.modules, "placer.cli", None)  # importing it raises ImportError, as a missing dependency would
    with pytest.raises(ImportError):
        placer_launch.main()
