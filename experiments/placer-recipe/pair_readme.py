"""The recipe's student against the shipped policy on the README's 18 regimes, paired stream by stream: the decision to ship.

    python experiments/placer-recipe/pair_readme.py STUDENT_DIR [--shipped docs/results/blend-quiet-figures]
        [--json experiments/placer-recipe/run-2026-11-26/readme-pairing.json]

``STUDENT_DIR`` holds ``evaluate.sh``'s ``<slug>.json`` (``placer evaluate ... --policies learned:placer`` with the student
as ``data/policies/placer.pt``); ``--shipped`` the same regimes' result files of the policy shipped today. Each stream
(cluster, arrival pattern, load, beta distribution, seed) is the same in both, so per regime (evaluation x load, 40
streams) the rows give each policy's mean avoidable blocking and the paired difference shipped - student with its 95 %
interval (positive: the student blocks fewer). ``worse`` marks a regime whose interval lies above 0 for the student.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from placer.evaluate.stats import mean_ci95

SLUGS = ("dgx8x8-poisson", "mixed-poisson", "dgx8x8-daily", "mixed-daily", "dgxh100-poisson", "dgx8x8-philly-arrivals")
METRICS = ("avoidable_blocking_rate", "blocking_rate", "mean_jct_s")


def streams(path: Path) -> dict[tuple[float, str, int], dict]:
    """A result file's runs of its one learned policy, keyed by (load, beta distribution, seed)."""
    runs = json.loads(path.read_text())["runs"]
    learned = [r for r in runs if str(r["policy"]).startswith("learned")]
    return {(float(r["load"]), str(r["beta_dist"]), int(r["seed"])): r for r in learned}


def paired(student: dict, shipped: dict, metric: str) -> dict:
    """Both policies' means of ``metric`` over the streams of both, and shipped - student with its 95 % half-width."""
    keys = sorted(set(student) & set(shipped))
    if len(keys) != len(student) or len(keys) != len(shipped):
        raise SystemExit(f"the two result files cover different streams ({len(student)} against {len(shipped)})")
    diff, half = mean_ci95([shipped[k][metric] - student[k][metric] for k in keys])
    mean = {name: sum(runs[k][metric] for k in keys) / len(keys) for name, runs in (("student", student), ("shipped", shipped))}
    return {"streams": len(keys), **mean, "shipped_minus_student": diff, "half": half}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("student", type=Path, help="evaluate.sh's COPY_DIR: <slug>.json per regime")
    parser.add_argument("--shipped", type=Path, default=Path("docs/results/blend-quiet-figures"))
    parser.add_argument("--json", type=Path, default=None, help="where to write the rows (default: print only)")
    args = parser.parse_args()
    rows, pooled = [], []
    for slug in SLUGS:
        student, shipped = streams(args.student / f"{slug}.json"), streams(args.shipped / f"{slug}.json")
        for load in sorted({k[0] for k in student}):
            row = {"evaluation": slug, "load": load}
            for metric in METRICS:
                row[metric] = paired(
                    {k: v for k, v in student.items() if k[0] == load}, {k: v for k, v in shipped.items() if k[0] == load}, metric
                )
            rows.append(row)
        pooled.append({"evaluation": slug, **{m: paired(student, shipped, m) for m in METRICS}})
    worse = 0
    print(f"{'evaluation':26}{'load':>5}{'student':>9}{'shipped':>9}   shipped - student (95 %)   mean JCT student / shipped")
    for row in rows:
        a, j = row["avoidable_blocking_rate"], row["mean_jct_s"]
        flag = "  worse" if a["shipped_minus_student"] + a["half"] < 0 else ""
        worse += bool(flag)
        gap = f"{a['shipped_minus_student']:+.4f} ± {a['half']:.4f}"
        jct = f"{j['student']:.0f} / {j['shipped']:.0f}"
        print(f"{row['evaluation']:26}{row['load']:>5}{a['student']:>9.4f}{a['shipped']:>9.4f}   {gap:24}   {jct}{flag}")
    for row in pooled:
        a = row["avoidable_blocking_rate"]
        gap = f"{a['shipped_minus_student']:+.4f} ± {a['half']:.4f}"
        print(f"pooled {row['evaluation']:26} student {a['student']:.4f} shipped {a['shipped']:.4f}  {gap}")
    print(f"regimes where the student blocks more (interval above 0): {worse} of {len(rows)}")
    if args.json is not None:
        args.json.write_text(json.dumps({"regimes": rows, "pooled": pooled, "worse": worse}, indent=1) + "\n")


if __name__ == "__main__":
    main()
