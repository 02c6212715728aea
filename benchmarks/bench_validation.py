"""The learned policy's validation as the recipe runs it, in jobs per second, against another checkout's.

    python benchmarks/bench_validation.py [--config data/configs/placer.toml] [--policy data/policies/placer.pt]
                                          [--episodes 1] [--workers 1] [--rounds 1] [--against DIR] [--smoke]

Validates the policy file ``--policy`` on the streams the recipe ``--config``'s first RL stage judges its checkpoints
on (``validation_configs`` of its environment, ``--episodes`` seeds of each setting: 1 is the stage's own validation),
through ``file_config_rates`` with ``--workers`` processes (1: the numpy actor here, in one process; the RL stage's
validations run ``eval_workers``, 2 in the shipped recipe), from a fresh process of its own.
It prints jobs per second, the ratio to ``--against DIR`` (a checkout of another commit, e.g.
``git worktree add /tmp/base e02221e``) alternated with it ``--rounds`` times in the same run, and whether the two
gave the same blocking rate on every stream: a speed-up must change speed, not results. One run at a time; about
seven minutes a run at the default size with one worker.
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
VALIDATE = """
import importlib, json, sys, tempfile, time
from pathlib import Path
for root in ("placer.policies", "policies"):  # this tree's namespace, or an older checkout's top-level package
    try:
        load_recipe = importlib.import_module(root + ".recipe").load_recipe
        validation = importlib.import_module(root + ".validation")
        break
    except ImportError:
        continue
config, policy_file, episodes, jobs, workers = Path(sys.argv[1]), Path(sys.argv[2]), *map(int, sys.argv[3:6])
with tempfile.TemporaryDirectory() as tmp:
    env = load_recipe(config, Path(tmp) / "recipe").rl[0].config.env
configs = list(validation.validation_configs(env, episodes, "learned"))
if jobs:  # the smoke run: one short stream of each evaluation
    short = lambda w: w.model_copy(update={"jobs": jobs, "beta_dists": w.beta_dists[:1]})
    configs = [c.model_copy(update={"workload": short(c.workload), "loads": c.loads[:1]}) for c in configs]
start = time.perf_counter()
rates = [float(r) for part in validation.file_config_rates(policy_file, configs, workers) for r in part]
wall = time.perf_counter() - start
print(json.dumps({"jobs_per_s": len(rates) * configs[0].workload.jobs / wall, "rates": rates, "wall_s": wall}))
"""


def validate(checkout: Path, config: Path, policy: Path, episodes: int, jobs: int, workers: int) -> tuple[float, list[float]]:
    """Jobs per second and each stream's blocking rate of ``policy`` on ``config``'s validation, run from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PLACER_DATA_DIR": str(checkout / "data"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(config), str(policy), str(episodes), str(jobs), str(workers)], cwd=checkout, env=env,
        capture_output=True, text=True, timeout=7200,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"error: the validation failed in {checkout}:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return float(out["jobs_per_s"]), [float(r) for r in out["rates"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "data" / "configs" / "placer.toml")
    parser.add_argument("--policy", type=Path, default=REPO / "data" / "policies" / "placer.pt")
    parser.add_argument("--episodes", type=int, default=1, help="seeds of each validation setting")
    parser.add_argument("--workers", type=int, default=1, help="processes the validation runs over")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", type=Path, default=None, help="a checkout of the commit to compare with")
    parser.add_argument("--smoke", action="store_true", help="one stream of 30 jobs per evaluation, one round: checks it runs")
    args = parser.parse_args()
    jobs = 30 if args.smoke else 0  # 0: the evaluation's own stream length
    if args.smoke:
        args.episodes, args.rounds = 1, 1
    if min(args.episodes, args.rounds, args.workers) < 1:
        parser.error("--episodes, --workers and --rounds must be >= 1")
    if args.against is not None and not (args.against / "placer" / "envs").exists():
        parser.error(f"--against {args.against}: not a checkout of this project")
    config, policy = args.config.resolve(), args.policy.resolve()
    for flag, path in (("--config", config), ("--policy", policy)):
        if not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    checkouts = {"this checkout": REPO, **({"--against": args.against.resolve()} if args.against is not None else {})}
    speeds: dict[str, list[float]] = {label: [] for label in checkouts}
    rates: dict[str, list[float]] = {}
    for _ in range(args.rounds):  # alternated: a drift in the machine's speed reaches both alike
        for label, checkout in checkouts.items():
            speed, rates[label] = validate(checkout, config, policy, args.episodes, jobs, args.workers)
            speeds[label].append(speed)
    for label, runs in speeds.items():
        shown = ", ".join(f"{r:,.0f}" for r in runs)
        print(f"{label:13s}: {statistics.median(runs):6,.0f} jobs/s (median of {len(runs)}: {shown})")
    mine = rates["this checkout"]
    print(f"mean blocking rate over {len(mine)} streams: {sum(mine) / len(mine):.6f}")
    if len(speeds) == 2:
        ratio = statistics.median(speeds["this checkout"]) / statistics.median(speeds["--against"])
        same = "the same" if mine == rates["--against"] else "DIFFERENT"
        print(f"ratio: {ratio:.2f}x the jobs/s; blocking rates on every stream: {same}")


if __name__ == "__main__":
    main()
