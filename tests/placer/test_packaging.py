"""A non-editable install (the wheel) ships the data: presets, graphs and the policy are found."""

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_wheel_ships_data_and_runs_outside_the_checkout(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("placer-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "placer/shipped/clusters/dgx8x8.toml" in names and "placer/shipped/policies/pacml.pt" in names
    assert "placer/shipped/graphs/resnet50.json" in names and "placer/shipped/traces/philly_pollux.csv" in names
    # one namespace (envs, policies inside) and the command's entry point beside it (placer_launch.py)
    assert {name.split("/")[0] for name in names} == {"placer", "placer_launch.py", "placer-0.1.0.dist-info"}
    assert "placer/envs/env.py" in names and "placer/policies/loading.py" in names
    entry_points = zipfile.ZipFile(wheel).read("placer-0.1.0.dist-info/entry_points.txt").decode()
    assert "learned = placer.policies.loading:make_learned_policy" in entry_points
    assert "train = placer.policies.cli:register" in entry_points
    assert "placer = placer_launch:main" in entry_points
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PLACER_DATA_DIR"} | {"PYTHONPATH": str(target)}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import placer, sys; print(placer.__file__); sys.argv = ['placer', 'predict', 'resnet50', "
            "'--cluster', 'dgx8x8', '--degree', '8']; from placer.cli import main; main()",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    first, _, rest = run.stdout.partition("\n")
    assert first.startswith(str(target))  # the wheel's code, not the checkout's
    assert json.loads(rest)["strategy"] == {"dp": 8, "tp": 1, "pp": 1}
    _the_installed_command_names_a_folder_that_shadows_it(target, tmp_path)


def _the_installed_command_names_a_folder_that_shadows_it(target: Path, tmp_path: Path) -> None:
    """pip's own ``placer`` script, run (``-S``: no editable install's import hook) where ``PYTHONPATH`` puts the current
    directory, which holds a package named placer, before the installed one: one line, status 2."""
    work = tmp_path / "work"
    (work / "placer").mkdir(parents=True)
    (work / "placer" / "__init__.py").write_text("")
    deps = list(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))  # numpy & co (a venv may be in ROOT)
    env = {k: v for k, v in os.environ.items() if k != "PLACER_DATA_DIR"} | {"PYTHONPATH": os.pathsep.join([".", str(target), *deps])}
    for cwd, status in ((tmp_path, 0), (work, 2)):
        run = subprocess.run(
            [sys.executable, "-S", str(target / "bin" / "placer"), "--version"], capture_output=True, text=True, cwd=cwd, env=env
        )
        assert run.returncode == status and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.stderr == f"error: a folder named placer ({work / 'placer'}) shadows the installed package, so placer cannot start: " + (
        "run from another directory, rename it, or take its folder off PYTHONPATH\n"
    )
