"""The structured-workload frontier: each policy against the better of ``lean:admit=auto`` and ``lean:admit=best``.

    python benchmarks/frontier.py runs/issue20 [--policies learned,learned:history]

Reads the evaluations ``placer evaluate --out DIR/CLUSTER-STRUCTURE`` wrote (and
``DIR/CLUSTER-STRUCTURE-*`` folders of the same streams, e.g. a policy or ``hindsight`` evaluated
later) and prints, per cluster and structure, one markdown row per policy and beta distribution:
its blocking rate minus the better baseline's (the one with the lower mean on that distribution),
paired by seed, with the 95 % interval and the relative change, the jobs/hour change, and the
share of the gap to ``hindsight:...`` closed where it was evaluated on the same seeds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from placer.evaluate import EvaluationConfig, EvaluationResult, merge_results
from placer.evaluate.stats import mean_ci95

BASELINES = ("lean:admit=auto", "lean:admit=best")


def load(folder: Path) -> EvaluationResult:
    data = json.loads((folder / "results.json").read_text())
    return EvaluationResult(EvaluationConfig.model_validate(data["record"]["config"]), data["runs"])


def paired(result: EvaluationResult, policy: str, reference: str, beta: str, metric: str) -> tuple[float, float, int]:
    by_seed = {(r["policy"], r["seed"]): r[metric] for r in result.runs if r["beta_dist"] == beta}
    seeds = sorted({s for p, s in by_seed if p == policy} & {s for p, s in by_seed if p == reference})
    mean, half = mean_ci95([by_seed[policy, s] - by_seed[reference, s] for s in seeds])
    return mean, half, len(seeds)


def rate(result: EvaluationResult, policy: str, beta: str) -> float:
    values = [r["blocking_rate"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == beta]
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--policies", default="learned", help="comma-separated policies to set against the baselines")
    args = parser.parse_args()
    policies = args.policies.split(",")
    print("| cluster | structure | policy | beta | blocking | minus better baseline (paired) | jobs/h change | gap to hindsight closed |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for main_folder in sorted(p for p in args.root.iterdir() if (p / "results.json").exists() and p.name.count("-") == 1):
        extra = sorted(p for p in args.root.glob(main_folder.name + "-*") if (p / "results.json").exists())
        result = merge_results([load(main_folder)] + [load(p) for p in extra]) if extra else load(main_folder)
        cluster, structure = main_folder.name.split("-")
        hindsight = next((p for p in result.config.policies if p.startswith("hindsight")), None)
        for policy in (p for p in policies if p in result.config.policies):
            for beta in result.config.beta_dists:
                better = min(BASELINES, key=lambda b: rate(result, b, beta))
                mean, half, _ = paired(result, policy, better, beta, "blocking_rate")
                jobs, _, _ = paired(result, policy, better, beta, "throughput_jobs_per_hour")
                closed = "-"
                if hindsight is not None:
                    saved, _, n = paired(result, better, policy, beta, "blocking_rate")
                    room, _, _ = paired(result, better, hindsight, beta, "blocking_rate")
                    closed = f"{saved / room:+.0%} ({n} seeds)" if room > 0 else "no gap"
                base = rate(result, better, beta)
                print(
                    f"| {cluster} | {structure} | {policy} | {beta} | {rate(result, policy, beta):.3f} | "
                    f"{mean:+.3f} ± {half:.3f} ({mean / base:+.0%} vs {better}) | {jobs:+.1f} | {closed} |"
                )


if __name__ == "__main__":
    main()
