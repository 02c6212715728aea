"""The structured-workload frontier: each policy against the better of ``lean:admit=auto`` and ``lean:admit=best``.

    python experiments/studies/frontier.py runs/issue20 [--policies learned,learned:history]
    python experiments/studies/frontier.py --smoke   # evaluates two 20-job streams into a temporary root first

Reads the evaluations ``placer evaluate --out DIR/CLUSTER-STRUCTURE`` wrote (and
``DIR/CLUSTER-STRUCTURE-*`` folders of the same streams: a policy evaluated later, and
``DIR/CLUSTER-STRUCTURE-hindsight``, the clairvoyant planner on fewer seeds) and prints, per
cluster and structure, one markdown row per policy and beta distribution: its blocking rate minus
the better baseline's (the one with the lower mean on that distribution), paired by seed, with
the 95 % interval and the relative change, the jobs/hour change, and the share of the gap to
``hindsight:...`` closed (on the seeds hindsight was evaluated on); then, per cluster and policy,
the difference pooled over every structure, beta distribution and seed (one interval over all
paired streams).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from placer.evaluate import EvaluationConfig, EvaluationResult, evaluate, merge_results, write_results
from placer.evaluate.stats import mean_ci95

BASELINES = ("lean:admit=auto", "lean:admit=best")


def load(folder: Path) -> EvaluationResult:
    data = json.loads((folder / "results.json").read_text())
    return EvaluationResult(EvaluationConfig.model_validate(data["record"]["config"]), data["runs"])


def paired(result: EvaluationResult, policy: str, reference: str, beta: str, metric: str) -> tuple[float, float, int]:
    values = differences(result, policy, reference, beta, metric)
    mean, half = mean_ci95(values)
    return mean, half, len(values)


def rate(result: EvaluationResult, policy: str, beta: str) -> float:
    values = [r["blocking_rate"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == beta]
    return sum(values) / len(values)


def smoke() -> None:
    """Evaluate the baselines and ``lean`` on two 20-job daily streams into a temporary root, then report it."""
    config = EvaluationConfig(
        cluster="pacml", beta_dists=["A"], load=1.5, jobs=40, seeds=2, queue="edf-bf", structure="daily",
        graphs=["alexnet", "resnet18"], policies=[*BASELINES, "lean"],
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        write_results(evaluate(config), Path(tmp) / "pacml-daily")
        sys.argv = [sys.argv[0], tmp, "--policies", "lean"]
        main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--policies", default="learned", help="comma-separated policies to set against the baselines")
    parser.add_argument("--compact", action="store_true", help="one row per cluster, structure and policy (the docs' table)")
    args = parser.parse_args()
    policies = args.policies.split(",")
    compact: dict[tuple[str, str, str], list[str]] = {}
    pooled: dict[tuple[str, str], list[float]] = {}  # (cluster, policy) -> per-stream differences with the better baseline
    if not args.compact:
        header = "| cluster | structure | policy | beta | blocking | minus better baseline (paired) | jobs/h change | gap closed |"
        print(header)
        print("|---|---|---|---|---:|---:|---:|---:|")
    for main_folder in sorted(p for p in args.root.iterdir() if (p / "results.json").exists() and p.name.count("-") == 1):
        extra = sorted(p for p in args.root.glob(main_folder.name + "-*") if (p / "results.json").exists())
        online = [load(main_folder)] + [load(p) for p in extra if not p.name.endswith("-hindsight")]
        result = merge_results(online)  # every seed the online policies share
        with_hindsight = merge_results(online + [load(p) for p in extra if p.name.endswith("-hindsight")])  # its (fewer) seeds
        cluster, structure = main_folder.name.split("-")
        hindsight = next((p for p in with_hindsight.config.policies if p.startswith("hindsight")), None)
        for policy in (p for p in policies if p in result.config.policies):
            for beta in result.config.beta_labels:
                better = min(BASELINES, key=lambda b: rate(result, b, beta))
                mean, half, _ = paired(result, policy, better, beta, "blocking_rate")
                pooled.setdefault((cluster, policy), []).extend(differences(result, policy, better, beta))
                jobs, _, _ = paired(result, policy, better, beta, "throughput_jobs_per_hour")
                closed = "-"
                if hindsight is not None:
                    saved, _, n = paired(with_hindsight, better, policy, beta, "blocking_rate")
                    room, _, _ = paired(with_hindsight, better, hindsight, beta, "blocking_rate")
                    closed = f"{saved / room:+.0%} ({n} seeds)" if room > 0 else "no gap"
                base = rate(result, better, beta)
                gap = f", gap {closed.split(' (')[0]}" if closed not in ("-", "no gap") else ""
                relative = f"{mean / base:+.0%}" if base > 0 else "n/a"  # nothing blocked by the baseline: no relative change
                compact.setdefault((cluster, structure, policy), []).append(f"{mean:+.3f} ± {half:.3f} ({relative}){gap}")
                if args.compact:
                    continue
                print(
                    f"| {cluster} | {structure} | {policy} | {beta} | {rate(result, policy, beta):.3f} | "
                    f"{mean:+.3f} ± {half:.3f} ({relative} vs {better}) | {jobs:+.1f} | {closed} |"
                )

    if args.compact:
        print("| cluster | structure | policy | " + " | ".join(f"beta {b}" for b in result.config.beta_labels) + " |")
        print("|---|---|---|" + "---:|" * len(result.config.beta_labels))
        for (cluster, structure, policy), cells in compact.items():
            print(f"| {cluster} | {structure} | {policy} | " + " | ".join(cells) + " |")
    print("\n| cluster | policy | streams | minus better baseline, pooled over structures and betas (paired) |")
    print("|---|---|---:|---:|")
    for (cluster, policy), values in pooled.items():
        mean, half = mean_ci95(values)
        print(f"| {cluster} | {policy} | {len(values)} | {mean:+.4f} ± {half:.4f} |")


def differences(result: EvaluationResult, policy: str, reference: str, beta: str, metric: str = "blocking_rate") -> list[float]:
    """Per seed shared by both: ``policy``'s ``metric`` minus ``reference``'s on the same stream."""
    by_seed = {(r["policy"], r["seed"]): r[metric] for r in result.runs if r["beta_dist"] == beta}
    seeds = sorted({s for p, s in by_seed if p == policy} & {s for p, s in by_seed if p == reference})
    return [by_seed[policy, s] - by_seed[reference, s] for s in seeds]


if __name__ == "__main__":
    smoke() if sys.argv[1:] == ["--smoke"] else main()
