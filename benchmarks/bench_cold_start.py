"""Cold start of the learned policy: a first ``placer.place(graph, "dgx8x8", {}, "learned")`` in a fresh process.

    python benchmarks/bench_cold_start.py [--runs 5] [--decisions 200] [--smoke]

Each run is a fresh interpreter (one core, one BLAS and torch thread) that times ``import placer``, then the
first learned decision after it (loading the shipped default policy, encoding the job's graph,
deciding), then warm decisions on dgx8x8 (64 devices): six graphs, each seen once before timing,
and 20 pre-drawn occupancies (half the devices busy). Two ways, measured in the same invocation,
runs alternating:

- ``now``: ``placer.place(..., "learned")`` as a user calls it: the policy file read without torch
  and the whole network in numpy (:mod:`placer.policies.inference`);
- ``old path``: what ``learned`` did before: the full SB3 policy built by
  :func:`placer.policies.model.load_policy_file` (torch, torch-geometric, SB3, sb3-contrib, gymnasium
  imported), each graph encoded by its torch GNN (:class:`TorchEncoded`, kept here to measure it),
  the actor in numpy as before; the policy object is passed to ``placer.place``.

Prints medians over the runs, the speed-ups and the targets: first decision <= 2 s after
``import placer``, warm decision <= 5 ms at 64 devices; and which of the training stack's
modules each way imported.

``--smoke`` runs each way once, with 10 warm decisions, unpinned, and times nothing it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "torch_geometric", "stable_baselines3", "sb3_contrib", "gymnasium")
COLD_TARGET_S, WARM_TARGET_MS = 2.0, 5.0

MEASURE = r"""
import json, statistics, sys, time
start = time.perf_counter()
import placer
imported = time.perf_counter()
import numpy as np
from placer import place, resolve_graph

way, decisions, heavy = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
first_graph = resolve_graph("resnet50")
if way == "now":
    policy = "learned"
else:  # the old path: the SB3 policy built from the file, its torch GNN encoding each graph
    import torch
    from placer.envs.observation import GRAPH_KEYS, UNLISTED, GraphRef, forward_size, graph_arrays
    from placer.common.shipped import default_policy_file
    from placer.policies.loading import LearnedPolicy
    from placer.policies.model import load_policy_file

    class TorchEncoded(LearnedPolicy):
        def __init__(self, torch_policy, env):
            super().__init__(torch_policy, env)
            self.torch_policy = torch_policy

        def _graph(self, job):
            cached = self._graphs.get(job.graph.key)
            if cached is None:
                nodes, edges = forward_size(job.graph)
                arrays = graph_arrays(job.graph, max(nodes, 1), max(edges, 1))
                batch = {k: torch.from_numpy(arrays[k]).unsqueeze(0).float() for k in GRAPH_KEYS}
                with torch.inference_mode():
                    encoding = self.torch_policy.pi_features_extractor.encode_arrays(batch)[0].numpy()
                cached = self._graphs[job.graph.key] = (encoding, GraphRef(UNLISTED, nodes))
            return cached

    torch.set_num_threads(1)  # as make_learned_policy did
    policy = TorchEncoded(*load_policy_file(default_policy_file()))
decision = place(first_graph, "dgx8x8", {}, policy)
cold = time.perf_counter() - imported
assert decision.accepted, decision

rng = np.random.default_rng(0)
devices = [f"s{s}-g{g}" for s in range(8) for g in range(8)]
states = [{"busy": {d: float(rng.exponential(3600.0)) for d in devices if rng.random() < 0.5}} for _ in range(20)]
graphs = [resolve_graph(g) for g in ("alexnet", "vgg16", "resnet18", "gnmt", "resnet50", "densenet121")]
for graph in graphs:  # each graph's first sight (its encoding) is not a warm decision
    place(graph, "dgx8x8", states[0], policy)
times = []
for i in range(decisions):
    started = time.perf_counter()
    place(graphs[i % len(graphs)], "dgx8x8", states[i % len(states)], policy, beta=0.3 + 0.7 * ((i * 7919) % 100) / 100)
    times.append(time.perf_counter() - started)
print(json.dumps({
    "import_s": imported - start,
    "cold_s": cold,
    "warm_ms": statistics.median(times) * 1e3,
    "heavy": [m for m in heavy if m in sys.modules],
}))
"""


def measure(way: str, decisions: int, *, pin: bool) -> dict:
    """One fresh interpreter's figures for ``way`` (``now`` or ``old``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", MEASURE, way, str(decisions), ",".join(HEAVY)]
    done = subprocess.run(
        [*(["taskset", "-c", "0"] if pin else []), *command], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the {way} measurement failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(runs: list[dict]) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in ("import_s", "cold_s", "warm_ms")} | {"heavy": runs[0]["heavy"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per way")
    parser.add_argument("--decisions", type=int, default=200, help="warm decisions per process")
    parser.add_argument("--smoke", action="store_true", help="each way once, 10 warm decisions, nothing timed worth reading")
    args = parser.parse_args()
    if args.runs < 1 or args.decisions < 1:
        parser.error("--runs and --decisions must be >= 1")
    if args.smoke:
        now, old = measure("now", 10, pin=False), measure("old", 10, pin=False)
        measured = ", ".join(k for k in now if k != "heavy")
        print(f"smoke: measured {measured}; imported by now: {', '.join(now['heavy']) or 'none'}, by old: {', '.join(old['heavy'])}")
        return
    pin = sys.platform.startswith("linux")
    runs: dict[str, list[dict]] = {"old": [], "now": []}
    for _ in range(args.runs):  # alternating, so that a busy spell of the host falls on both
        for way in runs:
            runs[way].append(measure(way, args.decisions, pin=pin))
    old, now = medians(runs["old"]), medians(runs["now"])
    print(f"median of {args.runs} fresh processes per way, one core; dgx8x8 (64 devices), shipped default policy")
    print(f"{'':44s} {'old path':>11s} {'now':>11s} {'speed-up':>9s}  target")
    rows = (
        ("import placer", "import_s", "s", None),
        ("first learned decision after import placer", "cold_s", "s", COLD_TARGET_S),
        ("warm decision (median)", "warm_ms", "ms", WARM_TARGET_MS),
    )
    for label, key, unit, target in rows:
        verdict = "" if target is None else f"<= {target:g} {unit} {'met' if now[key] <= target else 'MISSED'}"
        print(f"{label:44s} {old[key]:>8.3f} {unit:<2s} {now[key]:>8.3f} {unit:<2s} {old[key] / now[key]:>8.1f}x  {verdict}".rstrip())
    for way, figures in (("old path", old), ("now", now)):
        print(f"{way} imported: {', '.join(figures['heavy']) or 'none'} (of {', '.join(HEAVY)})")


if __name__ == "__main__":
    main()
