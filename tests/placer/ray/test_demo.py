"""``placer ray-demo``: a DDP job placed by placer on its own local Ray cluster, step times reported, the refit shown."""

import re
import subprocess
import sys

import pytest

from tests.placer.ray.conftest import REPO

pytest.importorskip("torch")


@pytest.mark.slow  # 19-33 s here (3 Ray nodes, two torch workers)
@pytest.mark.timeout(300)
def test_ray_demo_places_runs_reports_and_refits():
    done = subprocess.run(
        [sys.executable, "-m", "placer", "ray-demo", "--nodes", "2", "--steps", "9", "--http"],
        cwd=REPO, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "placement: 2 devices ['s0-g0', 's1-g0']" in out
    nodes = re.findall(r"rank (\d)/2: s\d-g0 on Ray node (\w+)", out)
    ran = re.findall(r"rank (\d) ran on node (\w+), Ray GPU ids \[0\]", out)
    assert len(nodes) == 2 and sorted(ran) == sorted(nodes) and nodes[0][1] != nodes[1][1]  # each rank on its bundle's node
    assert out.count("ms/step (median of 3 steps)") == 3
    if not re.search(r"refitted prediction: [\d.]+ ms/step", out):
        # a loaded machine: a chunk median > 10x the model's is held as suspect, one 1.5x from an earlier median of the
        # same job is refused (docs/service.md); the refit line counts what was kept and held, each refusal has its line
        why = re.search(r"refit: not landed, (\d+) measurements kept(?: \((\d+) held as suspect\))?, a fit needs (\d+)", out)
        assert why, out
        kept, held, needed = int(why.group(1)), int(why.group(2) or 0), int(why.group(3))
        refused = len(re.findall(r"ms/step \(median of 3 steps\): refused: .* apart ", out))
        assert kept < needed and kept + held + refused == 3, out
        predicted = float(re.search(r"predicted ([\d.]+) ms/step", out).group(1))
        medians = [float(m) for m in re.findall(r"measured ([\d.]+) ms/step \(median of 3 steps\)", out)]
        assert sum(m > 10 * predicted for m in medians) >= held, out
