"""``placer report``'s tables beyond the header: blocking and outcomes by policy, job percentiles, paired differences
and the gap closed, and what the planners, tuned and switching policies chose."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from statistics import fmean

from placer.cli.app import warn
from placer.cli.tables import TableFormat, emit, emit_by_beta, say
from placer.cli.verdicts import verdict_lines
from placer.common.errors import ResultsError, UsageError
from placer.evaluate.config import load_label
from placer.evaluate.stats import per_hour, per_hour_spec, plus_minus


def blocking_table(result, rows: list[dict], fmt: TableFormat) -> None:
    """One row per policy: blocking rate and jobs/hour per beta distribution (the best blocking in bold), of one load's ``rows``."""
    betas = result.config.beta_labels
    best = {b: min(r["blocking_rate"] for r in rows if r["beta_dist"] == b) for b in betas}
    body, bold = [], set()
    for i, policy in enumerate(result.config.policies):
        cells = {r["beta_dist"]: r for r in rows if r["policy"] == policy}
        row = [policy]
        for k, b in enumerate(betas):
            row += [
                plus_minus(cells[b]["blocking_rate"], cells[b]["blocking_rate_ci95"]),
                per_hour(cells[b]["throughput_jobs_per_hour"], cells[b]["throughput_jobs_per_hour_ci95"]),
            ]
            if cells[b]["blocking_rate"] == best[b]:
                bold.add((i, 1 + 2 * k))
        body.append(row)
    emit_by_beta(body, betas, ["blocking", "jobs/h"], fmt, bold=bold)


OUTCOME_HEADER = [
    "load",
    "beta",
    "policy",
    "blocking",
    "unavoidable",
    "avoidable blocking",
    "mean JCT (s)",
    "p95 JCT (s)",
    "slowdown",
    "jobs/h",
    "device-h/job",
]


def outcomes_table(result, rows: list[dict], fmt: TableFormat) -> None:
    """One row per (load, beta, policy): what a policy can change (placer.sim.metrics), means over seeds;
    the least avoidable blocking of each (load, beta) in bold."""
    say(
        "\nWhat a policy can change (blocked among the jobs the fastest placement on the idle cluster serves in time; mean ± 95% CI):\n",
        fmt,
    )
    body, bold = [], set()
    for i, r in enumerate(rows):
        same = [o["avoidable_blocking_rate"] for o in rows if (o["load"], o["beta_dist"]) == (r["load"], r["beta_dist"])]
        if r["avoidable_blocking_rate"] == min(same):
            bold.add((i, 5))
        body.append(
            [
                load_label(r["load"]),  # a replayed trace has its own arrivals: no load was set (None)
                r["beta_dist"],
                r["policy"],
                f"{r['blocking_rate']:.3f}",
                f"{r['unavoidable_share']:.3f}",
                plus_minus(r["avoidable_blocking_rate"], r["avoidable_blocking_rate_ci95"]),
                f"{r['mean_jct_s']:.0f}",
                f"{r['p95_jct_s']:.0f}",
                f"{r['mean_slowdown']:.2f}",
                f"{r['throughput_jobs_per_hour']:{per_hour_spec(r['throughput_jobs_per_hour'])}}",
                f"{r['device_hours_per_job']:.3f}",
            ]
        )
    emit(OUTCOME_HEADER, body, fmt, bold=bold)


def samples_of(result, paths: list[Path]):
    """The completed jobs' JCT, wait and slowdown per policy, from the per-job tables of ``result`` (a warning for the
    policies of an evaluation that wrote none; a one-line error when none did)."""
    from placer.evaluate.jobs import job_samples, read_jobs

    covered = {shown for table in result.jobs for shown in table.names.values()}
    missing = [p for p in result.config.policies if p not in covered]
    if not covered:
        where = ", ".join(str(path.parent) for path in paths)
        raise ResultsError(f"no per-job table (jobs.csv) in {where}: evaluations before placer wrote one have none; evaluate again")
    if missing:
        warn(f"no per-job table (jobs.csv) for {', '.join(missing)}: left out of the per-job percentiles")
    return job_samples(read_jobs(result.jobs), [p for p in result.config.policies if p in covered])


def jobs_table(samples, fmt: TableFormat) -> None:
    """Per policy: completed and blocked jobs, and the p50/p90/p99 of JCT, wait and slowdown over the completed jobs."""
    from placer.evaluate.jobs import DISTRIBUTIONS, PERCENTILES, percentiles

    say(
        "\nPer job, over every completed job of every run (JCT: start to finish; wait: arrival to start; slowdown: "
        "(wait + JCT) / fastest JCT on the idle cluster; percentiles linear between ranks):\n",
        fmt,
    )
    units = {"jct_s": ("JCT", " (s)", ".1f"), "wait_s": ("wait", " (s)", ".1f"), "slowdown": ("slowdown", "", ".2f")}
    header = ["policy", "completed", "blocked"]
    header += [f"{units[m][0]} p{q}{units[m][1]}" for m in DISTRIBUTIONS for q in PERCENTILES]
    body = []
    for policy in samples.values:
        cells = [policy, str(samples.completed(policy)), str(samples.blocked[policy])]
        for metric in DISTRIBUTIONS:
            spec = units[metric][2]
            cells += ["-" if math.isnan(v) else f"{v:{spec}}" for v in percentiles(samples.array(policy, metric))]
        body.append(cells)
    emit(header, body, fmt)
    _reasons_table(samples, fmt)


def _reasons_table(samples, fmt: TableFormat) -> None:
    """Per policy, its blocked jobs by why (each reason some policy's jobs were blocked for, in BlockReason's order): a
    policy that trades one reason for another (jobs expiring in the queue for a full queue) shows it here."""
    from placer.sim.types import BlockReason

    seen = {reason for counts in samples.reasons.values() for reason in counts}
    if not seen:
        return
    known = [r for r in BlockReason if r.value in seen]
    shown = [r.value for r in known] + sorted(seen - set(BlockReason))
    meanings = "; ".join(f"{r.value}: {r.meaning}" for r in known)
    say(f"\nWhy the blocked jobs were blocked (jobs; {meanings}):\n", fmt)
    body = [[policy, str(samples.blocked[policy]), *(str(samples.reasons[policy][r]) for r in shown)] for policy in samples.values]
    emit(["policy", "blocked", *shown], body, fmt)


def paired_table(result, rows, against: str, fmt: TableFormat, metric: str = "blocking_rate") -> None:
    """Each policy's ``metric`` minus ``against``'s, paired by seed (and load), per beta distribution; then a line per
    row (and per load) saying which blocks fewer and whether the paired interval resolves it (:mod:`placer.cli.verdicts`)."""
    if against not in result.config.policies:
        raise UsageError(f"--against {against!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_labels
    pooled = " and loads" if len(result.config.load_values) > 1 else ""
    what = "Blocking rate" if metric == "blocking_rate" else "Avoidable blocking rate"
    say(f"\n{what} minus {against}'s on the same job streams (mean ± 95% CI over seeds{pooled}; relative change):\n", fmt)
    body = []
    base = {b: fmean(r[metric] for r in rows if r["policy"] == against and r["beta_dist"] == b) for b in betas}
    for policy in result.config.policies:
        if policy == against:
            continue
        cells = []
        for b in betas:
            mean, half = result.paired(policy, against, b, metric)
            relative = f" ({mean / base[b]:+.0%})" if base[b] > 0 else ""
            cells.append(plus_minus(mean, half, "+.3f").replace("± +", "± ") + relative)
        body.append([policy, *cells])
    emit_by_beta(body, betas, [f"minus {against}"], fmt)
    bullet = "- " if fmt == TableFormat.markdown else ""
    say("\n" + "\n".join(bullet + line for line in verdict_lines(result, against, metric)), fmt)


def gap_table(result, against: str, reference: str, fmt: TableFormat) -> None:
    """Per policy, the share of the gap between ``against`` and the clairvoyant ``reference`` it closes."""
    if reference not in result.config.policies:
        raise UsageError(f"--hindsight {reference!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_labels
    say(f"\nGap to {reference} closed: ({against} - policy) / ({against} - {reference}), paired means:\n", fmt)
    body = []
    for policy in result.config.policies:
        if policy in (against, reference):
            continue
        cells = []
        for b in betas:
            saved, _ = result.paired(against, policy, b)
            room, _ = result.paired(against, reference, b)
            cells.append(f"{saved / room:+.0%}" if room > 0 else "n/a (no gap)")
        body.append([policy, *cells])
    emit_by_beta(body, betas, ["gap closed"], fmt)


def _reporting(result, statistic: str) -> list[str]:
    """The evaluated policies whose runs report ``statistic`` in their ``policy_stats``."""
    return [p for p in result.config.policies if any(statistic in r.get("policy_stats", {}) for r in result.runs if r["policy"] == p)]


def tuned_table(result, fmt: TableFormat) -> None:
    """The admission threshold each tuned policy (lean:admit=best) chose per beta distribution, on its tuning streams."""
    tuned = _reporting(result, "admit")
    if not tuned:
        return
    betas = result.config.beta_labels
    say("\nThreshold chosen on tuning streams (apart from the evaluated ones):\n", fmt)
    body = []
    for policy in tuned:
        chosen = {r["beta_dist"]: r["policy_stats"]["admit"] for r in result.runs if r["policy"] == policy}
        body.append([policy, *(f"admit={chosen[b]}" for b in betas)])
    emit_by_beta(body, betas, ["threshold"], fmt)


def chosen_table(result, fmt: TableFormat) -> None:
    """The member each ``best`` policy chose per load and beta distribution, on its tuning streams."""
    _by_load_table(result, fmt, ("chosen", "chosen"), "Member chosen on tuning streams (apart from the evaluated ones)", _chosen)


def members_table(result, fmt: TableFormat) -> None:
    """The share of decisions each ``adaptive`` policy gave each member, per load and beta distribution (all seeds)."""
    title = "Decisions by member (adaptive: the member of the load it measured; all seeds)"
    _by_load_table(result, fmt, ("decisions_by_member", "decisions"), title, _member_shares)
    for policy in _reporting(result, "decisions_by_member"):
        stats = next(r["policy_stats"] for r in result.runs if r["policy"] == policy and "policy_stats" in r)
        table = ", ".join(f"{load:.2f} {member}" for load, member in stats["table"])
        say(
            f"\n{policy} as tuned: measured load -> member {table}; the meter over {stats['window']} arrivals, "
            f"a member changed after {stats['sticky']} arrivals in a row asking for it\n",
            fmt,
        )


def overrides_table(result, fmt: TableFormat) -> None:
    """For a gate (``learned:below=L``, ``:last=K``, ``:waiting=W``): the holds it placed as ``adaptive`` would, per job, per
    load and beta distribution."""
    title = "Holds placed as adaptive would (learned:below=L, :last=K or :waiting=W; per job, all seeds)"
    _by_load_table(result, fmt, ("overrides", "overrides"), title, _per_job)


def _per_job(runs: list[dict]) -> str:
    return f"{sum(r['policy_stats']['overrides'] for r in runs) / sum(r['jobs'] for r in runs):.3f}"


def _chosen(runs: list[dict]) -> str:
    return runs[-1]["policy_stats"]["chosen"]


def _member_shares(runs: list[dict]) -> str:
    counts = sum((Counter(r["policy_stats"]["decisions_by_member"]) for r in runs), Counter())
    return ", ".join(f"{name} {n / counts.total():.0%}" for name, n in counts.most_common())


def _by_load_table(result, fmt: TableFormat, statistic: tuple[str, str], title: str, cell: Callable[[list[dict]], str]) -> None:
    """A row per policy reporting ``statistic`` (its key in ``policy_stats`` and its column's name) and load, a column per
    beta distribution: ``cell`` of the policy's runs there."""
    policies = _reporting(result, statistic[0])
    if not policies:
        return
    betas = result.config.beta_labels
    trace = bool(result.config.trace)  # one replayed trace: no load was set
    say(f"\n{title}{'' if trace else ', by load'}:\n", fmt)
    body = []
    for policy in policies:
        for load in result.config.load_values:
            runs = [r for r in result.runs if r["policy"] == policy and (trace or r.get("load", load) == load)]
            cells = [[r for r in runs if r["beta_dist"] == b] for b in betas]
            body.append([policy if trace else f"{policy} (load {load})", *(cell(here) if here else "-" for here in cells)])
    emit_by_beta(body, betas, [statistic[1]], fmt)


def deviations_table(result, fmt: TableFormat) -> None:
    """For planners that count them: the share of offers where they left their base rule, by kind (summed over seeds)."""

    planners = _reporting(result, "offers")
    if not planners:
        return
    betas = result.config.beta_labels
    say("\nOffers where a planner left its base rule (all seeds; by kind):\n", fmt)
    body = []
    for policy in planners:
        cells = []
        for b in betas:
            stats = [r["policy_stats"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == b and "policy_stats" in r]
            offers = sum(s["offers"] for s in stats)
            kinds = sum((Counter(s["deviations"]) for s in stats), Counter())
            share = f"{kinds.total() / offers:.1%}" if offers else "-"
            cells.append(f"{share} of {offers} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")")
        body.append([policy, *cells])
    emit_by_beta(body, betas, ["deviations"], fmt)
