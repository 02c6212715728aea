"""The learning environment's steps per second, as the recipe's RL stage configures it, against another checkout's.

    python benchmarks/bench_env_steps.py [--config data/configs/placer.toml] [--steps 3000] [--warmup 5000]
                                         [--rounds 2] [--against DIR] [--smoke]

Builds the first RL stage's ``EnvConfig`` of the recipe ``--config``, steps one environment ``--warmup`` times with
random valid actions (untimed: its caches fill as in a run of 10^5 steps), then times ``--steps`` more, in a fresh
process of its own. With ``--against DIR`` (a checkout of another commit, e.g. ``git worktree add /tmp/base d3b29b9``)
it alternates the two checkouts ``--rounds`` times in the same run and prints each run, the medians and their ratio.
One process at a time, on one core's worth of work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STEPS = """
import importlib, json, sys, tempfile, time
from pathlib import Path
import numpy as np
for root in ("placer.policies", "policies"):  # this tree's namespace, or an older checkout's top-level package
    try:
        load_recipe = importlib.import_module(root + ".recipe").load_recipe
        break
    except ImportError:
        continue
from placer.envs.env import ClusterPlacementEnv
config, warmup, steps = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
with tempfile.TemporaryDirectory() as tmp:
    env = ClusterPlacementEnv(load_recipe(config, Path(tmp) / "recipe").rl[0].config.env)
rng = np.random.default_rng(0)
env.reset(seed=0)
def run(n):
    for _ in range(n):
        _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if done:
            env.reset()
run(warmup)
start = time.perf_counter()
run(steps)
print(json.dumps({"steps_per_s": steps / (time.perf_counter() - start)}))
"""


def steps_per_s(checkout: Path, config: Path, warmup: int, steps: int) -> float:
    """Steps per second of ``config``'s RL-stage environment, run from ``checkout`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PLACER_DATA_DIR": str(checkout / "data"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", STEPS, str(config), str(warmup), str(steps)], cwd=checkout, env=env, capture_output=True,
        text=True, timeout=3600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"error: the environment failed in {checkout}:\n{done.stderr[-2000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["steps_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "data" / "configs" / "placer.toml")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, default=None, help="a checkout of the commit to compare with")
    parser.add_argument("--smoke", action="store_true", help="50 steps after 50, one round: checks it runs")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.warmup, args.rounds = 50, 50, 1
    if min(args.steps, args.rounds) < 1 or args.warmup < 0:
        parser.error("--steps and --rounds must be >= 1, --warmup >= 0")
    if args.against is not None and not (args.against / "placer" / "envs").exists():
        parser.error(f"--against {args.against}: not a checkout of this project")
    config = args.config.resolve()
    if not config.is_file():
        parser.error(f"--config {args.config}: no such file")
    checkouts = {"this checkout": REPO, **({"--against": args.against.resolve()} if args.against is not None else {})}
    rates: dict[str, list[float]] = {label: [] for label in checkouts}
    for _ in range(args.rounds):  # alternated: a drift in the machine's speed reaches both alike
        for label, checkout in checkouts.items():
            rates[label].append(steps_per_s(checkout, config, args.warmup, args.steps))
    for label, runs in rates.items():
        shown = ", ".join(f"{r:,.0f}" for r in runs)
        print(f"{label:13s}: {statistics.median(runs):7,.0f} steps/s (median of {len(runs)}: {shown})")
    if len(rates) == 2:
        print(f"ratio: {statistics.median(rates['this checkout']) / statistics.median(rates['--against']):.2f}x the steps/s")


if __name__ == "__main__":
    main()
