"""Where a learned policy departs from the per-regime ``best`` and which of its extra blocks those departures cause.

    python experiments/studies/departures.py [--cluster mixed] [--load 0.5] [--seeds 10] [--jobs 500]
        [--policy-file experiments/policies/default.pt] [--smoke]

On ``--seeds`` paired streams of each beta distribution A-D (an EDF queue with backfilling, job lengths
``loguniform:0.1:10``, Poisson arrivals: the families figures' streams), runs ``learned`` and, at each offer it
decides, asks ``best`` (tuned per beta distribution on streams apart, as ``placer evaluate`` tunes it) what it
would do in the same state. Prints how often they agree, by kind of departure, then runs ``best`` on the same
streams and counts the avoidable jobs only one of them blocks, and of the learned policy's, how many it departed on
(a job it held or placed otherwise): the rest were blocked by what its earlier departures did to the cluster.
Then, for the offers where the learned policy holds a job that ``best`` places: the job's size rank (the share of the
jobs offered so far with a shorter sequential JCT, what ``lean:admit=Q`` compares with Q) and what became of it.
``--smoke``: one seed of beta A, 30 jobs.
"""

from __future__ import annotations

import argparse
import bisect
import copy
import math
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from placer.baselines.policy import Policy, run_policy
from placer.cli.options import check_seed_range
from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import PlacerError, validation_message
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.runner import Runner, Task
from placer.sim.options import options
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, JobRecord, Outcome, Place

RANK_BINS = (0.5, 0.8, 0.9, 0.95)  # size-rank bins of held jobs: below 0.5, 0.5-0.8, ..., 0.95 and above
KINDS = ("agree", "both hold", "same degree, other devices", "other degree", "learned holds, best places", "learned places, best holds")

RETIRED_DEFAULT = Path(__file__).resolve().parents[2] / "experiments" / "policies" / "default.pt"  # learned:default, retired


def departure(learned: Decision, best: Decision) -> str:
    """The kind (one of :data:`KINDS`) of the learned policy's decision against ``best``'s in the same state."""
    if not isinstance(learned, Place):
        return "both hold" if not isinstance(best, Place) else "learned holds, best places"
    if not isinstance(best, Place):
        return "learned places, best holds"
    if learned.degree != best.degree:
        return "other degree"
    return "agree" if learned.devices == best.devices else "same degree, other devices"


class Shadowed(Policy):
    """``policy``'s decisions, each compared with what ``shadow`` decides in the same state (``shadow`` sees every
    offer, so its own state, e.g. the lengths a size rule has seen, follows the run)."""

    def __init__(self, policy: Policy, shadow: Policy) -> None:
        self.policy, self.shadow = policy, shadow
        self.kinds: Counter[str] = Counter()
        self.departed: set[int] = set()  # jobs on whose own offer the policy decided otherwise
        self.rules: Counter[tuple[str, str]] = Counter()  # (the policy's rules, the shadow's) where only the devices differ
        self.held: Counter[int] = Counter()  # job -> offers on which the policy held it and the shadow placed it
        self.held_ranks: Counter[int] = Counter()  # RANK_BINS bin -> such offers
        self._sizes: list[float] = []  # sequential JCTs of the jobs offered so far, sorted
        self._seen: set[int] = set()

    def reset(self, rng: np.random.Generator) -> None:
        self.policy.reset(rng)
        self.shadow.reset(np.random.default_rng(0))

    def decide(self, job: Job, view: ClusterView) -> Decision:
        decision, other = self.policy.decide(job, view), self.shadow.decide(job, view)
        kind = departure(decision, other)
        self.kinds[kind] += 1
        if job.job_id not in self._seen:
            self._seen.add(job.job_id)
            bisect.insort(self._sizes, job.sequential_jct_s)
        if kind == "learned holds, best places":
            self.held[job.job_id] += 1
            rank = bisect.bisect_left(self._sizes, job.sequential_jct_s) / len(self._sizes)
            self.held_ranks[bisect.bisect_right(RANK_BINS, rank)] += 1
        if isinstance(decision, Place) and isinstance(other, Place) and kind == "same degree, other devices":  # which rules gave them
            self.rules[(rules_giving(decision, job, view), rules_giving(other, job, view))] += 1
        if kind not in ("agree", "both hold"):
            self.departed.add(job.job_id)
        return decision


def rules_giving(decision: Place, job: Job, view: ClusterView) -> str:
    """The placement rules that give ``decision``'s devices at its degree ("other" when none does), joined by "/"."""
    table = options(job, view, degrees=[decision.degree], rules=tuple(PLACEMENT_RULES))
    return "/".join(o.rule for o in table if o.devices == decision.devices) or "other"


def fate(record: JobRecord) -> str:
    """``placed``, or ``blocked: REASON``."""
    return "placed" if record.outcome == Outcome.ACCEPTED else f"blocked: {record.reason}"


def families_runner(
    cluster: str,
    load: float,
    policies: list[str],
    seeds: int,
    jobs: int,
    betas: list[str],
    policy_file: Path | None,
    structure: str = "iid",
    first_seed: int = 0,
) -> Runner:
    """``placer evaluate``'s runner on the families figures' streams of one cluster and load: an EDF queue with
    backfilling, job lengths ``loguniform:0.1:10``, ``structure`` arrivals (``iid``: Poisson), ``learned`` from
    ``policy_file`` (None: ``learned:default``'s, the policy these analyses studied), seeds from ``first_seed``."""
    workload = {"jobs": jobs, "queue": "edf-bf", "size": "loguniform:0.1:10", "beta_dists": betas, "structure": [structure]}
    extra = {"policy_file": str(policy_file or RETIRED_DEFAULT)}
    config = {
        "cluster": cluster,
        "policies": policies,
        "seeds": seeds,
        "first_seed": first_seed,
        "loads": [load],
        "workload": workload,
        **extra,
    }
    return Runner(EvaluationConfig.model_validate(config))


def regime_parser(doc: str, *, first_seed: int, seeds: int, first_seed_help: str = "the first stream seed") -> argparse.ArgumentParser:
    """The options every script over regimes shares: ``--cluster``, ``--load``, ``--first-seed``, ``--seeds``, ``--jobs``,
    ``--policy-file``, ``--workers`` and ``--smoke`` (check them with :func:`regime_arguments`)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--cluster", default="dgx8x8,mixed", help="comma-separated presets")
    parser.add_argument("--load", default="0.5,0.9,1.3", help="comma-separated offered loads")
    parser.add_argument("--first-seed", type=int, default=first_seed, help=first_seed_help)
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--policy-file", type=Path, default=None, help="the learned policy (default: learned:default's default.pt)")
    parser.add_argument("--workers", type=int, default=2, help="regimes measured at once, each in its own process")
    parser.add_argument("--smoke", action="store_true")
    return parser


def regime_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[str], list[float]]:
    """The clusters and loads of a script over regimes (comma-separated ``--cluster`` and ``--load``), its ``--seeds``
    from ``--first-seed``, ``--jobs`` and ``--workers`` checked: bad input exits through ``parser.error``, one line."""
    try:
        loads = [float(v) for v in args.load.split(",")]
    except ValueError:
        parser.error(f"--load: comma-separated numbers, got {args.load!r}")
    clusters = [c for c in args.cluster.split(",") if c]
    if min(args.seeds, args.jobs, args.workers) < 1 or not clusters or not all(0 < load < math.inf for load in loads):
        parser.error("--seeds, --jobs and --workers must be >= 1, --cluster named, every --load a number > 0")
    try:
        check_seed_range(args.first_seed, args.seeds)
    except PlacerError as error:
        parser.error(str(error))
    return clusters, loads


def run_regimes(
    parser: argparse.ArgumentParser, measure: Callable[..., dict], tasks: Sequence[tuple[Any, ...]], workers: int
) -> list[dict]:
    """``measure(*task)`` for every task, ``workers`` at once in processes; a domain error (an unknown cluster, a missing
    policy file) exits through ``parser.error``, one line."""
    try:
        if workers > 1 and len(tasks) > 1:
            with ProcessPoolExecutor(min(workers, len(tasks))) as pool:
                return list(pool.map(measure, *zip(*tasks, strict=True)))
        return [measure(*task) for task in tasks]
    except PlacerError as error:
        parser.error(str(error))
    except ValidationError as error:
        parser.error(validation_message(error))


def avoidable_blocked(records) -> set[int]:
    return {r.job_id for r in records if r.outcome == Outcome.BLOCKED and r.avoidable}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="mixed")
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--policy-file", type=Path, default=None, help="the learned policy (default: learned:default's default.pt)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.seeds < 1 or args.jobs < 1 or args.load <= 0:
        parser.error("--seeds and --jobs must be >= 1, --load > 0")
    betas = ["A"] if args.smoke else ["A", "B", "C", "D"]
    seeds, jobs = (1, 30) if args.smoke else (args.seeds, args.jobs)
    runner = families_runner(args.cluster, args.load, ["learned", "best"], seeds, jobs, betas, args.policy_file)
    kinds: Counter[str] = Counter()
    rules: Counter[tuple[str, str]] = Counter()
    only_learned = only_best = on_own_offer = 0
    members: Counter[str] = Counter()
    held_ranks: Counter[int] = Counter()
    fates: Counter[str] = Counter()  # what became of the jobs held where best placed
    for beta in range(len(betas)):
        for seed in range(seeds):
            learned, best = runner.policy(Task(beta, seed, 0)), runner.policy(Task(beta, seed, 1))
            members[(best.stats() or {}).get("chosen", best.name)] += 1
            stream = runner.jobs(beta, seed)
            shadowed = Shadowed(learned, copy.deepcopy(best))  # its own copy: the reference run below resets the other
            ran = run_policy(shadowed, runner.cost, stream, runner.queue, runner.run_rng(beta, seed))
            reference = run_policy(best, runner.cost, stream, runner.queue, runner.run_rng(beta, seed))
            mine, theirs = avoidable_blocked(ran.records), avoidable_blocked(reference.records)
            kinds += shadowed.kinds
            held_ranks += shadowed.held_ranks
            fates += Counter(fate(r) for r in ran.records if r.job_id in shadowed.held)
            rules += shadowed.rules
            only_learned += len(mine - theirs)
            only_best += len(theirs - mine)
            on_own_offer += len((mine - theirs) & shadowed.departed)
    offers = sum(kinds.values())
    name = args.policy_file or "default.pt"
    print(f"{args.cluster}, load {args.load}, Poisson, {seeds} seeds x {jobs} jobs x {','.join(betas)}: learned ({name}) against best")
    print(f"best's members: {', '.join(f'{m} ({n} streams)' for m, n in members.most_common())}")
    print("| decision of learned against best's in the same state | offers | share |\n|---|---:|---:|")
    for kind in KINDS:
        print(f"| {kind} | {kinds[kind]:,} | {kinds[kind] / max(offers, 1):.1%} |")
    if rules:
        print("\n| where only the devices differ: rule of learned's | rule of best's | offers |\n|---|---|---:|")
        for (learned_rule, best_rule), count in rules.most_common():
            print(f"| {learned_rule} | {best_rule} | {count:,} |")
    print(
        f"\navoidable jobs blocked by learned only: {only_learned}, by best only: {only_best} "
        f"(net {only_learned - only_best:+d} of {seeds * jobs * len(betas):,} jobs)"
    )
    print(
        f"of learned's own: {on_own_offer} on an offer of that job where it departed from best, "
        f"{only_learned - on_own_offer} after agreeing on every offer of it (blocked by what earlier departures did to the cluster)"
    )
    print_held(held_ranks, fates)


def print_held(held_ranks: Counter[int], fates: Counter[str]) -> None:
    """Where learned holds and best places: the held jobs' size ranks (by offers) and what became of them (by jobs)."""
    offers = sum(held_ranks.values())
    if not offers:
        return
    edges = ("0", *(f"{b:g}" for b in RANK_BINS), "1")
    print("\n| learned holds, best places: size rank of the job | offers | share |\n|---|---:|---:|")
    for k in range(len(RANK_BINS) + 1):
        print(f"| {edges[k]}-{edges[k + 1]} | {held_ranks[k]:,} | {held_ranks[k] / offers:.1%} |")
    jobs = sum(fates.values())
    print(f"\n{jobs:,} jobs held so ({offers / max(jobs, 1):.0f} offers each): " + ", ".join(f"{f} {n:,}" for f, n in fates.most_common()))


if __name__ == "__main__":
    main()
