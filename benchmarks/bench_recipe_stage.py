"""A recipe's RL stage as the recipe runs it (its baselines, anchor and validation), against another checkout's.

    python benchmarks/bench_recipe_stage.py [--config data/configs/placer.toml] [--steps 2048] [--against DIR] [--smoke]

Runs the first RL stage of the recipe ``--config`` (its PPO with the teacher's baseline rollouts on each episode's
arrivals, the KL anchor, its checkpoints and final paired validation against ``best``), from fresh weights (no warm
start: the clone is the recipe's stage before), for ``--steps`` and twice as many timesteps, each in a fresh process,
and prints the wall time of each, the marginal rate (``--steps`` / the difference: what each further
step costs) and the fixed cost of a stage (tuning, validation, start-up). With ``--against DIR`` (a checkout of
another commit, e.g. ``git worktree add /tmp/base e897caf``) it runs the same stage there in the same run and prints the
ratios. One process at a time, on the machine's cores as the recipe uses them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGE = """
import json, sys, tempfile, time
from pathlib import Path
start = time.perf_counter()
import importlib
for root in ("placer.policies", "policies"):  # this tree's namespace, or an older checkout's top-level package
    try:
        load_recipe = importlib.import_module(root + ".recipe").load_recipe
        train = importlib.import_module(root + ".train").train
        break
    except ImportError:
        continue
config, steps = Path(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    stage = load_recipe(config, Path(tmp) / "recipe").rl[0].config
    fresh = {"init_policy": None, "imitation_steps": 0, "dagger_rounds": 0}  # PPO from fresh weights: no clone stage inside
    train_cfg = stage.train.model_copy(update={**fresh, "eval_every": steps, "checkpoint_every": steps})
    stage = stage.model_copy(update={"train": train_cfg})
    train(stage, Path(tmp) / "stage", timesteps=steps, progress=False)
print(json.dumps({"wall_s": time.perf_counter() - start}))
"""


def stage_seconds(checkout: Path, config: Path, steps: int) -> float:
    """Wall seconds of the RL stage of ``config`` for ``steps`` timesteps, run from ``checkout`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PLACER_DATA_DIR": str(checkout / "data")}
    done = subprocess.run(
        [sys.executable, "-c", STAGE, str(config), str(steps)], cwd=checkout, env=env, capture_output=True, text=True, timeout=7200
    )
    if done.returncode != 0:
        raise SystemExit(f"error: the stage failed in {checkout}:\n{done.stderr[-2000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["wall_s"])


def describe(label: str, one: float, two: float, steps: int) -> tuple[float, float]:
    marginal = steps / max(two - one, 1e-9)
    fixed = max(one - steps / marginal, 0.0)
    print(f"{label}: {steps} steps {one:7.1f} s, {2 * steps} steps {two:7.1f} s; {marginal:6.0f} timesteps/s a further step, "
          f"{fixed:5.1f} s fixed")  # fmt: skip
    return marginal, fixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "data" / "configs" / "placer.toml")
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--against", type=Path, default=None, help="a checkout of the commit to compare with")
    parser.add_argument("--smoke", action="store_true", help="the quick recipe, 64 steps: checks it runs")
    args = parser.parse_args()
    if args.smoke:
        args.config, args.steps = REPO / "data" / "configs" / "quick.toml", 64
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    if args.against is not None and not (args.against / "policies" / "train.py").is_file():
        parser.error(f"--against {args.against}: not a checkout of this project")
    config = args.config.resolve()
    if not config.is_file():
        parser.error(f"--config {args.config}: no such file")
    rows = {}
    for label, checkout in (("this checkout", REPO), ("--against", args.against)):
        if checkout is None:
            continue
        with tempfile.TemporaryDirectory():
            one = stage_seconds(checkout.resolve(), config, args.steps)
            two = stage_seconds(checkout.resolve(), config, 2 * args.steps)
        rows[label] = describe(f"{label:13s}", one, two, args.steps)
    if len(rows) == 2:
        (m, f), (bm, bf) = rows["this checkout"], rows["--against"]
        print(f"ratio: {m / bm:.1f}x the timesteps/s of a further step, fixed cost {bf / max(f, 1e-9):.1f}x smaller")


if __name__ == "__main__":
    main()
