"""Decision latency of lean and the learned policy at 32 and 8,192 devices, against a baseline release.

    python benchmarks/bench_decisions.py [--baseline bfdd20c] [--decisions 300] [--smoke]

Measures the same thing twice in one run, on one core and one torch thread: in this checkout and
in a throwaway ``git worktree`` of ``--baseline`` (default: the release before the speed-ups,
with its own shipped policy), on the same Python and packages. Each tree is measured with a
measurement written for its own module layout, in a process whose ``sys.path`` is that tree: this
checkout with :data:`MEASURE`, the baseline with the ``MEASURE`` of ``--baseline-measure`` (default
``e5df7dc``, the last commit of the flat layout ``bfdd20c`` has), read from git. Prints
per-decision medians (µs) and the ratios the speed targets are stated in:

- ``lean`` on ``pacml`` (32 devices) and on 1,024 DGX A100 servers (8,192 devices): >= 3x;
- ``learned`` (the shipped policy) on the same two clusters: >= 4x;
- a warm ``placer.place(graph, "dgx8x8", policy="learned")`` on densenet121 (names, not objects,
  as a service caller passes them): < 3 ms at the median.

Each decision sees one of 40 pre-drawn occupancies (half the devices busy, free times
exponential) and one of six graphs, so caches warm as they would in a long run. Occupancies
recur, so the placement table memoised per free-device mask (``CostModel.placements``) is hit
after the first 40 decisions, as it is for every offer after the first at one decision point of
a queue; on a cluster whose occupancy never repeats each decision pays for its table once.

``--smoke`` runs this checkout's measurement on 20 decisions, without the baseline, and times nothing it reports.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, statistics, sys, time
import numpy as np
import torch
torch.set_num_threads(1)
from placer import place, resolve_graph
from placer.cluster.topology import Cluster, load_cluster, parse_cluster_spec
from placer.cost import CostModel
from placer.baselines.registry import make_heuristic
from placer.sim.state import ClusterView
from placer.sim.types import Job
from placer.common.shipped import default_policy_file
from placer.policies.loading import LearnedPolicy

decisions = int(sys.argv[1])
graphs = [resolve_graph(g) for g in ("alexnet", "vgg16", "resnet18", "gnmt", "resnet50", "densenet121")]


def cluster_of(servers):
    if servers is None:
        return load_cluster("pacml")
    spec = load_cluster("dgx8x8").spec.model_dump()
    spec["name"] = f"dgx{servers}x8"
    spec["servers"][0]["count"] = servers
    return Cluster(parse_cluster_spec(spec))


def median_us(decide, cost):
    rng = np.random.default_rng(0)
    n = cost.cluster.num_devices
    views = []
    for _ in range(40):
        free = rng.random(n) < 0.5
        free_at = np.where(free, 0.0, rng.exponential(3600.0, n))
        views.append(ClusterView(cost, 0.0, free, free_at, int((~free).sum()) // 4))
    times = []
    for i in range(decisions):
        graph = graphs[i % len(graphs)]
        seq = cost.sequential_jct_s(graph)
        job = Job(i, graph, 0.0, 0.3 + 0.7 * ((i * 7919) % 100) / 100, graph.iterations, seq)
        start = time.perf_counter()
        decide(job, views[i % len(views)])
        times.append(time.perf_counter() - start)
    return statistics.median(times[len(graphs) * 2:]) * 1e6  # after the first sight of each graph


out = {}
learned = LearnedPolicy.from_file(default_policy_file())
for label, servers in (("32", None), ("8192", 1024)):
    cost = CostModel(cluster_of(servers))
    out[f"lean@{label}"] = median_us(make_heuristic("lean").decide, cost)
    out[f"learned@{label}"] = median_us(learned.decide, CostModel(cost.cluster))
densenet = resolve_graph("densenet121")
place(densenet, "dgx8x8", None, "learned", beta=0.5)
times = []
for _ in range(max(decisions // 5, 20)):
    start = time.perf_counter()
    place(densenet, "dgx8x8", None, "learned", beta=0.5)
    times.append(time.perf_counter() - start)
out["place densenet121"] = statistics.median(times) * 1e6
print(json.dumps(out))
"""

TARGETS = {"lean@32": 3.0, "lean@8192": 3.0, "learned@32": 4.0, "learned@8192": 4.0}


def measurement_at(revision: str) -> str:
    """The ``MEASURE`` script of this benchmark as it stood at ``revision`` (read from git, never run here)."""
    source = subprocess.run(
        ["git", "show", f"{revision}:benchmarks/bench_decisions.py"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if source.returncode != 0:
        raise SystemExit(f"cannot read benchmarks/bench_decisions.py at {revision}: {source.stderr.strip()}")
    for node in ast.parse(source.stdout).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MEASURE" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"benchmarks/bench_decisions.py at {revision} has no MEASURE script")


def measure(tree: Path, decisions: int, script: str = MEASURE, *, pin: bool = True) -> dict[str, float]:
    """Run ``script`` in a fresh interpreter whose ``sys.path`` starts at ``tree`` (so it imports that tree's code)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [*(["taskset", "-c", "0"] if pin else []), sys.executable, "-c", script, str(decisions)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"measurement in {tree} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="bfdd20c", help="git revision to compare against")
    parser.add_argument("--baseline-measure", default="e5df7dc", help="git revision whose MEASURE fits the baseline's module layout")
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="20 decisions here, no baseline, nothing timed worth reading")
    args = parser.parse_args()
    if args.smoke:
        print(f"smoke: measured {', '.join(measure(ROOT, 20, pin=False))}")
        return
    script = measurement_at(args.baseline_measure)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.baseline], cwd=ROOT, check=True, capture_output=True)
        try:
            before = measure(tree, args.decisions, script)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False, capture_output=True)
    now = measure(ROOT, args.decisions)
    print(f"{'per decision (median)':24s} {args.baseline:>12s} {'now':>12s} {'speed-up':>9s}  target")
    for key in before:
        ratio = before[key] / now[key]
        target = TARGETS.get(key)
        if key.startswith("place"):
            verdict = f"< 3,000 µs {'met' if now[key] < 3000 else 'MISSED'}"
        else:
            verdict = f">= {target:.0f}x {'met' if ratio >= target else 'MISSED'}"
        print(f"{key:24s} {before[key]:>10,.0f}µs {now[key]:>10,.0f}µs {ratio:>8.1f}x  {verdict}")


if __name__ == "__main__":
    main()
