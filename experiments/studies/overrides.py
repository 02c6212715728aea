"""The room in a learned policy's holds: the policy with each hold replaced by the placement another policy makes there.

    python experiments/studies/overrides.py [--cluster dgx8x8,mixed] [--load 0.5,0.9,1.3] [--by best] [--below L] [--waiting W]
        [--structure iid] [--first-seed 0] [--seeds 5] [--jobs 500] [--policy-file experiments/policies/default.pt] [--workers 2] [--smoke]

On the families figures' streams of each cluster and load (``--seeds`` paired streams of each beta distribution A-D,
an EDF queue with backfilling, job lengths ``loguniform:0.1:10``, Poisson arrivals or ``--structure daily``), runs
three policies: ``learned``; ``overridden`` (:class:`~placer.baselines.guard.Guarded`), which decides as ``learned``
except where ``learned`` holds a job that ``--by`` places in the same state, and there places it as ``--by`` does;
and ``--by`` alone. ``--by best`` (tuned
per beta distribution on streams apart, as ``placer evaluate`` tunes it) measures what following the teacher's
admission boundary, and nothing else of it, would recover; ``--by adaptive`` (the member tuned for the load it
measures) is the same with an online rule; ``--by own`` places each hold as the learned policy's own most likely
placement there (its ranking with holding masked out), so ``own`` alone is the policy that never holds a job it can place.
``--below L`` overrides only while the offered load measured from the last 96 arrivals (:class:`LoadMeter`'s default
window, one of the learned policy's two; before it reads one, as low) is below ``L``: a policy told no regime;
``--waiting W`` only while at most W jobs wait, the held one included.
Streams are seeds ``--first-seed``, ``--first-seed`` + 1, ... (the families figures': 0).
Prints, per regime, the overrides per job and the paired differences in avoidable blocking, mean ± 95 % interval
over the streams (Student's t); ``--workers`` regimes at once, each in its own process. ``--smoke``: one seed of beta A, 30 jobs,
``mixed`` at load 0.9.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

# a sibling script: experiments/studies/ is on the path of a script run from it
from departures import families_runner, regime_arguments, regime_parser, run_regimes

from placer.baselines.guard import Guarded
from placer.baselines.policy import Policy, run_policy
from placer.envs.action import REJECT, action_mask, decision
from placer.envs.observation import Offer, observe
from placer.evaluate.runner import Task
from placer.evaluate.stats import mean_ci95, plus_minus
from placer.policies.loading import JobHistory, LearnedPolicy
from placer.sim.types import Decision


class Placing(LearnedPolicy):
    """The learned policy's most likely placement wherever one is open (holding masked out), else its hold."""

    def choose(self, offer: Offer, history: JobHistory, advice: tuple[Decision, ...] = ()) -> Decision:
        mask = action_mask(offer.options, self.env.max_degree, len(self.env.rules))
        if mask.sum() == 1:
            return decision(REJECT, offer.options)
        mask[REJECT] = False
        encoding, graph = self._graph(offer.job)
        obs = observe(offer, history, self.env, graph, advice)
        return decision(self.actor.act(encoding, obs, mask), offer.options)


def measure(
    cluster: str,
    load: float,
    by: str,
    gate: dict[str, Any],
    structure: str,
    first: int,
    seeds: int,
    jobs: int,
    betas: list[str],
    policy_file,
) -> dict:
    """One regime: each stream's avoidable blocking rate under learned, overridden and ``by``, and the overrides made;
    ``gate``: :class:`Guarded`'s ``below`` and ``waiting``."""
    names = ["learned"] if by == "own" else ["learned", by]
    runner = families_runner(cluster, load, names, seeds, jobs, betas, policy_file, structure, first_seed=first)
    rates: dict[str, list[float]] = {"learned": [], "overridden": [], "by": []}
    overrides = 0
    for beta in range(len(betas)):
        for seed in range(first, first + seeds):
            learned = runner.policy(Task(beta, seed, 0))
            if by == "own":
                other: Policy = Placing(learned.policy, learned.env)
                shadow: Policy = Placing(learned.policy, learned.env)
            else:
                other = runner.policy(Task(beta, seed, 1))
                shadow = copy.deepcopy(other)  # its own copy: the run of `by` alone resets the other
            stream = runner.jobs(beta, seed)
            overridden = Guarded(learned, shadow, **gate)
            for name, policy in (("learned", learned), ("overridden", overridden), ("by", other)):
                rates[name].append(
                    run_policy(policy, runner.cost, stream, runner.queue, runner.run_rng(beta, seed)).metrics.avoidable_blocking_rate
                )
            overrides += overridden.overrides
    return {"cluster": cluster, "load": load, "rates": rates, "overrides_per_job": overrides / (seeds * jobs * len(betas))}


def differences(rates: dict[str, list[float]], a: str, b: str) -> str:
    """``a``'s rates less ``b``'s, paired by stream: ``mean ± 95 % half-width``."""
    mean, half = mean_ci95([x - y for x, y in zip(rates[a], rates[b], strict=True)])
    return ("+" if mean >= 0 else "") + plus_minus(mean, half, ".4f")


def main() -> None:
    parser = regime_parser(__doc__, first_seed=0, seeds=5)
    parser.add_argument("--by", default="best", choices=("best", "adaptive", "own"), help="the policy whose placements replace holds")
    parser.add_argument("--below", type=float, default=math.inf, help="override only while the measured load is below this")
    parser.add_argument("--waiting", type=int, default=None, help="override only while at most this many jobs wait")
    parser.add_argument("--structure", default="iid", choices=("iid", "daily"), help="Poisson arrivals, or the daily cycle")
    args = parser.parse_args()
    clusters, loads = regime_arguments(parser, args)
    if (args.waiting is not None and args.waiting < 1) or not args.below > 0:
        parser.error("--waiting must be >= 1, --below > 0")
    betas = ["A"] if args.smoke else ["A", "B", "C", "D"]
    seeds, jobs = (1, 30) if args.smoke else (args.seeds, args.jobs)
    if args.smoke:
        clusters, loads = ["mixed"], [0.9]
    gate = {"below": args.below, "waiting": args.waiting}
    tasks = [
        (c, load, args.by, gate, args.structure, args.first_seed, seeds, jobs, betas, args.policy_file) for c in clusters for load in loads
    ]
    rows = run_regimes(parser, measure, tasks, args.workers)
    name = args.policy_file or "default.pt"
    when = f" while the measured load is below {args.below:g}" if args.below < math.inf else ""
    when += f"{' and' if when else ''} while at most {args.waiting} jobs wait" if args.waiting is not None else ""
    arrivals = "Poisson" if args.structure == "iid" else "daily cycle"
    print(
        f"learned ({name}), its holds overridden by {args.by}{when}; {arrivals}, "
        f"{seeds} seed{'s' if seeds > 1 else ''}{f' from {args.first_seed}' if args.first_seed else ''} x {jobs} jobs x {','.join(betas)}"
    )
    print(f"avoidable blocking, paired differences (mean ± 95 % interval over {seeds * len(betas)} streams)\n")
    print(f"| cluster | load | overrides per job | {args.by} | learned - {args.by} | overridden - {args.by} | overridden - learned |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        r = row["rates"]
        print(
            f"| {row['cluster']} | {row['load']:g} | {row['overrides_per_job']:.3f} | {np.mean(r['by']):.4f} | "
            f"{differences(r, 'learned', 'by')} | {differences(r, 'overridden', 'by')} | {differences(r, 'overridden', 'learned')} |"
        )


if __name__ == "__main__":
    main()
