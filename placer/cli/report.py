"""``placer report``: an evaluation's summary as markdown, paired differences and planner deviations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from placer.cli.app import app, err_console
from placer.common.errors import PlacerError


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="evaluation folders (with results.json) or the files; several: the same streams")],
    plots: Annotated[bool, typer.Option(help="also redraw the PNG plots beside results.json")] = False,
    against: Annotated[str | None, typer.Option(help="also print each policy's blocking rate minus this policy's, paired by seed")] = None,
) -> None:
    """Print an evaluation's summary as a markdown table (blocking rate and throughput, mean ± 95% CI).

    Several evaluations of the same job streams (equal settings but for the policies, e.g. a new
    policy against baselines evaluated before) are reported as one; --plots writes beside the first.
    """
    import json

    from placer.evaluate import EvaluationConfig, EvaluationResult, merge_results

    loaded = []
    for folder in results:
        path = folder / "results.json" if folder.is_dir() else folder
        try:
            data = json.loads(path.read_text())
            loaded.append(EvaluationResult(EvaluationConfig.model_validate(data["record"]["config"]), data["runs"]))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            raise PlacerError(f"{path}: not an evaluation results file ({type(exc).__name__})") from None
        loaded[-1].timelines = _timelines(path.parent / "timelines.json") if plots else []
    result = merge_results(loaded)
    path = results[0] / "results.json" if results[0].is_dir() else results[0]
    if plots:
        from placer.evaluate.plots import plot_all

        err_console.print("wrote " + ", ".join(str(p) for p in plot_all(result, path.parent)))
    rows = result.summary()
    if result.config.trace:
        jobs = result.runs[0]["jobs"] if result.runs else 0
        typer.echo(f"{result.config.cluster}, trace {result.config.trace} ({jobs} jobs), {result.config.strategy} cost model\n")
    else:
        typer.echo(
            f"{result.config.cluster}, load {result.config.load}, queue {result.config.queue}, size {result.config.size}, "
            f"{result.config.jobs} jobs x {result.config.seeds} seeds, "
            f"{result.config.strategy} cost model, graphs: {', '.join(result.config.graphs) or result.config.graphs_dir}\n"
        )
    typer.echo(
        "| policy | "
        + " | ".join(f"beta {b} blocking" for b in result.config.beta_dists)
        + " | "
        + " | ".join(f"beta {b} jobs/h" for b in result.config.beta_dists)
        + " |"
    )
    typer.echo("|---|" + "---:|" * (2 * len(result.config.beta_dists)))
    for policy in result.config.policies:
        cells = {r["beta_dist"]: r for r in rows if r["policy"] == policy}
        best = {b: min(r["blocking_rate"] for r in rows if r["beta_dist"] == b) for b in result.config.beta_dists}
        blocking = [
            (f"**{cells[b]['blocking_rate']:.3f}**" if cells[b]["blocking_rate"] == best[b] else f"{cells[b]['blocking_rate']:.3f}")
            + f" ± {cells[b]['blocking_rate_ci95']:.3f}"
            for b in result.config.beta_dists
        ]
        throughput = [
            f"{cells[b]['throughput_jobs_per_hour']:.1f} ± {cells[b]['throughput_jobs_per_hour_ci95']:.1f}"
            for b in result.config.beta_dists
        ]
        typer.echo(f"| {policy} | " + " | ".join(blocking + throughput) + " |")
    if against is not None:
        _paired_table(result, rows, against)
    _deviations_table(result)


def _timelines(path: Path) -> list[dict]:
    import json

    try:
        return json.loads(path.read_text()) if path.exists() else []
    except json.JSONDecodeError:
        raise PlacerError(f"{path}: not valid JSON") from None


def _paired_table(result, rows, against: str) -> None:
    if against not in result.config.policies:
        raise PlacerError(f"--against {against!r} is not one of the evaluated policies: {', '.join(result.config.policies)}")
    betas = result.config.beta_dists
    typer.echo(f"\nBlocking rate minus {against}'s on the same job streams (mean ± 95% CI over seeds; relative change):\n")
    typer.echo("| policy | " + " | ".join(f"beta {b}" for b in betas) + " |")
    typer.echo("|---|" + "---:|" * len(betas))
    base = {r["beta_dist"]: r["blocking_rate"] for r in rows if r["policy"] == against}
    for policy in result.config.policies:
        if policy == against:
            continue
        cells = []
        for b in betas:
            mean, half = result.paired(policy, against, b)
            relative = f" ({mean / base[b]:+.0%})" if base[b] > 0 else ""
            cells.append(f"{mean:+.3f} ± {half:.3f}{relative}")
        typer.echo(f"| {policy} | " + " | ".join(cells) + " |")


def _deviations_table(result) -> None:
    """For planners that count them: the share of offers where they left their base rule, by kind (summed over seeds)."""
    from collections import Counter

    planners = [p for p in result.config.policies if any("policy_stats" in r for r in result.runs if r["policy"] == p)]
    if not planners:
        return
    betas = result.config.beta_dists
    typer.echo("\nOffers where a planner left its base rule (all seeds; by kind):\n")
    typer.echo("| policy | " + " | ".join(f"beta {b}" for b in betas) + " |")
    typer.echo("|---|" + "---:|" * len(betas))
    for policy in planners:
        cells = []
        for b in betas:
            stats = [r["policy_stats"] for r in result.runs if r["policy"] == policy and r["beta_dist"] == b and "policy_stats" in r]
            offers = sum(s["offers"] for s in stats)
            kinds = sum((Counter(s["deviations"]) for s in stats), Counter())
            share = f"{kinds.total() / offers:.1%}" if offers else "-"
            cells.append(f"{share} of {offers} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")")
        typer.echo(f"| {policy} | " + " | ".join(cells) + " |")
