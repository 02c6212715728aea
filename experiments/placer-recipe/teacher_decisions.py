"""What a policy decides differently from a heuristic it is compared with, on the recipe's validation streams.

    python experiments/placer-recipe/teacher_decisions.py NAME=POLICY [NAME=POLICY ...] [--cluster dgx8x8]
        [--loads 0.7,0.9,1.1,1.3] [--shadow lean:admit=0.9+best_fit] [--json OUT.json]

POLICY is a policy file (``.pt``) or a policy name (``best``'s members are plain heuristics). Each policy drives the
distil stage's validation streams of ``--cluster`` (every structure, beta distribution and seed of
``data/configs/placer.toml``, at ``--loads``); at each of its decisions the ``--shadow`` heuristic is asked too, on the
same offer (it sees every offer of the run, as an adviser does: :class:`placer.envs.advice.Advisers`), and at each job's first
offer (its arrival; a queued job is offered again at later decision points, not counted) the pair is counted:
both place the job on the same devices; the same degree elsewhere; the policy a smaller or a larger degree; the policy
rejects (or holds) where the shadow places; the policy places where the shadow rejects (or holds). Per load: those
fractions of the first offers where either places, the policy's mean degree where it places, and its blocking rate.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from placer.baselines.policy import Policy
from placer.envs.advice import Advisers
from placer.evaluate.runner import Runner, tasks
from placer.policies.loading import LearnedPolicy
from placer.policies.recipe import load_recipe
from placer.policies.validation import validation_configs
from placer.sim.state import ClusterView
from placer.sim.types import Decision, Job, Place

KINDS = ("same", "same_degree", "smaller", "larger", "rejects", "places", "both_reject")


class Shadowed(Policy):
    """``inner``, with every decision compared to the ``shadow`` heuristic's on the same offer (counted in ``counts``)."""

    def __init__(self, inner: Policy, shadow: str, max_degree: int) -> None:
        self.inner, self.spec = inner, inner.spec
        self.shadow = Advisers((shadow,), max_degree)
        self.counts: Counter[str] = Counter()
        self.degrees: list[int] = []
        self.seen: set[int] = set()

    def reset(self, rng: np.random.Generator) -> None:
        self.inner.reset(rng)
        self.shadow.reset()
        self.seen = set()

    def decide(self, job: Job, view: ClusterView) -> Decision:
        (theirs,) = self.shadow.advise(job, view)
        ours = self.inner.decide(job, view)
        if job.job_id not in self.seen:  # a job's first offer, on arrival: a queued job's later offers are not counted
            self.seen.add(job.job_id)
            self.counts[kind(ours, theirs)] += 1
        if isinstance(ours, Place):
            self.degrees.append(ours.degree)
        return ours


def kind(ours: Decision, theirs: Decision) -> str:
    """How ``ours`` differs from ``theirs`` (one of :data:`KINDS`)."""
    if not isinstance(ours, Place):
        return "rejects" if isinstance(theirs, Place) else "both_reject"
    if not isinstance(theirs, Place):
        return "places"
    if ours.devices == theirs.devices:
        return "same"
    if ours.degree == theirs.degree:
        return "same_degree"
    return "smaller" if ours.degree < theirs.degree else "larger"


class Heuristic(Policy):
    """The heuristic ``name`` as one policy (built on each cluster it meets, as an adviser is)."""

    def __init__(self, name: str, max_degree: int) -> None:
        self.advisers = Advisers((name,), max_degree)

    def reset(self, rng: np.random.Generator) -> None:
        self.advisers.reset()

    def decide(self, job: Job, view: ClusterView) -> Decision:
        return self.advisers.advise(job, view)[0]


def policy_of(text: str, max_degree: int) -> Policy:
    return LearnedPolicy.from_file(Path(text)) if text.endswith(".pt") else Heuristic(text, max_degree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", help="NAME=POLICY: a policy file (.pt) or a heuristic's name")
    parser.add_argument("--config", type=Path, default=Path("data/configs/placer.toml"))
    parser.add_argument("--cluster", default="dgx8x8")
    parser.add_argument("--loads", default="0.7,0.9,1.1,1.3")
    parser.add_argument("--shadow", default="lean:admit=0.9+best_fit")
    parser.add_argument("--streams", type=int, default=0, help="at most this many streams a load (0: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    recipe = load_recipe(args.config, Path("/tmp/unused-recipe-out"))
    env, episodes = recipe.distil.config.env, recipe.section.validation_episodes
    loads = [float(x) for x in args.loads.split(",")]
    report: dict[str, dict[str, dict[str, float]]] = {}
    for item in args.policies:
        name, _, text = item.partition("=")
        report[name] = {}
        for load in loads:
            configs = [
                c.model_copy(update={"loads": (load,), "policies": [name]})
                for c in validation_configs(env.with_changes(clusters=[args.cluster]), episodes, "para_min")
                if c.cluster == args.cluster and load in c.load_values
            ]
            shadowed = Shadowed(policy_of(text, env.max_degree), args.shadow, env.max_degree)
            rates = []
            for config in configs:
                runner = Runner(config, policies=[shadowed])
                rates += [runner.run(task)[0]["blocking_rate"] for task in tasks(config)]
                if args.streams and len(rates) >= args.streams:
                    break
            total = sum(shadowed.counts.values())
            placed = total - shadowed.counts["both_reject"]  # offers where either places: a hold both make is no decision
            row = {k: shadowed.counts[k] / placed for k in KINDS if k != "both_reject"}
            row |= {
                "offers": total,
                "either_places": placed,
                "mean_degree": float(np.mean(shadowed.degrees)),
                "blocking": float(np.mean(rates)),
                "streams": len(rates),
            }
            report[name][str(load)] = row
            cells = "  ".join(f"{k} {row[k]:.3f}" for k in KINDS if k != "both_reject")
            print(
                f"{name:12s} {load:4} blocking {row['blocking']:.4f} ({len(rates)} streams)  degree {row['mean_degree']:.2f}  {cells}",
                flush=True,
            )
    if args.json is not None:
        args.json.write_text(json.dumps({"shadow": args.shadow, "cluster": args.cluster, "policies": report}, indent=1) + "\n")


if __name__ == "__main__":
    main()
