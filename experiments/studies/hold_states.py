"""The state of the cluster at each hold of the learned policy that another policy would place: what a gate could read.

    python experiments/studies/hold_states.py [--cluster dgx8x8,mixed] [--load 0.5,0.9,1.3] [--structure iid,daily] [--by best]
        [--first-seed 200] [--seeds 4] [--jobs 500] [--policy-file experiments/policies/default.pt] [--workers 2] [--smoke]

On the families figures' streams of each regime (``--seeds`` paired streams from ``--first-seed`` of each beta
distribution A-D, an EDF queue with backfilling, job lengths ``loguniform:0.1:10``, Poisson arrivals or the daily
cycle), runs the learned policy and, at every offer it holds (queue or reject) where ``--by`` (run beside it on the same
state, tuned as ``placer evaluate`` tunes it) places, records: the share of devices free, the jobs waiting (the offered
one included), and the job's slack (time left before its deadline over the JCT of ``--by``'s placement). Prints, per
regime, the holds per job and the 10th, 50th and 90th percentiles of each. The default seeds are apart from the
figures' (0-9 and 100-109). ``--smoke``: one seed of beta A, 30 jobs, ``mixed`` at load 0.9.
"""

from __future__ import annotations

import numpy as np

# a sibling script: experiments/studies/ is on the path of a script run from it
from departures import families_runner, regime_arguments, regime_parser, run_regimes

from placer.baselines.policy import Policy, run_policy
from placer.evaluate.runner import Task
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place


class HoldRecorder(Policy):
    """Decides as ``policy``; records the state at each of its holds that ``by`` would place."""

    def __init__(self, policy: Policy, by: Policy) -> None:
        self.policy, self.by, self.states = policy, by, []

    def reset(self, rng: np.random.Generator) -> None:
        self.policy.reset(rng)
        self.by.reset(rng)

    def decide(self, job: Job, view: ClusterView) -> Decision:
        decision, other = self.policy.decide(job, view), self.by.decide(job, view)
        if isinstance(other, Place) and not isinstance(decision, Place):
            jct_s = view.cost.jct_s(job.graph, other.devices, job.iterations)
            self.states.append((view.num_free / view.cluster.num_devices, len(view.waiting), job.remaining_s(view.now) / jct_s))
        return decision


def measure(cluster: str, load: float, structure: str, by: str, first: int, seeds: int, jobs: int, betas: list[str], policy_file) -> dict:
    """One regime: the states at the holds over every stream, an (n, 3) array: share of devices free,
    jobs waiting, slack."""
    runner = families_runner(cluster, load, ["learned", by], seeds, jobs, betas, policy_file, structure, first_seed=first)
    states: list[tuple[float, int, float]] = []
    for beta in range(len(betas)):
        for seed in range(first, first + seeds):
            recorder = HoldRecorder(runner.policy(Task(beta, seed, 0)), runner.policy(Task(beta, seed, 1)))
            run_policy(recorder, runner.cost, runner.jobs(beta, seed), runner.queue, runner.run_rng(beta, seed))
            states += recorder.states
    return {"regime": (cluster, structure, load), "states": np.array(states, dtype=float).reshape(-1, 3), "jobs": seeds * jobs * len(betas)}


def main() -> None:
    parser = regime_parser(__doc__, first_seed=200, seeds=4, first_seed_help="the first stream seed (apart from the figures': 200)")
    parser.add_argument("--structure", default="iid,daily", help="comma-separated: iid (Poisson arrivals), daily (the cycle)")
    parser.add_argument("--by", default="best", choices=("best", "adaptive"), help="the policy that would place the holds")
    args = parser.parse_args()
    clusters, loads = regime_arguments(parser, args)
    structures = args.structure.split(",")
    if not set(structures) <= {"iid", "daily"}:
        parser.error(f"--structure: iid and/or daily, got {args.structure!r}")
    betas = ["A"] if args.smoke else ["A", "B", "C", "D"]
    seeds, jobs = (1, 30) if args.smoke else (args.seeds, args.jobs)
    if args.smoke:
        clusters, loads, structures = ["mixed"], [0.9], ["iid"]
    tasks = [
        (c, load, s, args.by, args.first_seed, seeds, jobs, betas, args.policy_file) for c in clusters for s in structures for load in loads
    ]
    rows = run_regimes(parser, measure, tasks, args.workers)
    last = args.first_seed + seeds - 1
    seed_text = f"seeds {args.first_seed}-{last}" if seeds > 1 else f"seed {args.first_seed}"
    print(
        f"learned ({args.policy_file or 'default.pt'}), its holds that {args.by} would place; {seed_text} x {jobs} jobs x {','.join(betas)}"
    )
    print("percentiles 10 / 50 / 90 over the holds\n")
    print("| cluster | arrivals | load | holds per job | devices free | jobs waiting | slack (x JCT) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        cluster, structure, load = row["regime"]
        states = row["states"]
        cells = [
            " / ".join(f"{v:.2f}" if k != 1 else f"{v:.0f}" for v in np.percentile(states[:, k], [10, 50, 90])) if len(states) else "-"
            for k in range(3)
        ]
        arrivals = "Poisson" if structure == "iid" else "daily"
        print(f"| {cluster} | {arrivals} | {load:g} | {len(states) / row['jobs']:.2f} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
