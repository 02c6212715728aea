"""``placer demo``: load the shipped policy, place a job, predict a split, evaluate against the heuristics."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from placer.cli.app import app, console, progress_bar
from placer.cli.evaluate import summary_table
from placer.common.shipped import default_policy_file
from placer.graphs.catalog import PACML_GRAPHS, resolve_graph


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="where the demo evaluation is written")] = Path("runs/demo"),
    jobs: Annotated[int, typer.Option(help="arrivals per run")] = 300,
) -> None:
    """Load the shipped policy, place one job, predict a split, and compare with the heuristics on a short run."""
    from placer.api.query import place as decide_placement
    from placer.api.query import predict as predict_placement
    from placer.baselines.plugins import plugin_names
    from placer.evaluate import EvaluationConfig, total_decisions, write_results
    from placer.evaluate import evaluate as run_evaluation
    from placer.evaluate.plots import plot_all
    from placer.sim.workload import WorkloadSpec

    shipped = default_policy_file()
    learned = "learned" in plugin_names() and shipped.exists()
    if not learned:
        console.print(f"[yellow]learned policy unavailable (install '.\\[all]' and keep {escape(str(shipped))}); heuristics only[/]")
    graph = resolve_graph("resnet101")
    console.rule("1. place one job: resnet101 (held out of training), deadline 0.25 x sequential, 8 DGX A100 (dgx8x8)")
    decision = decide_placement(
        graph, "dgx8x8", None, "learned" if learned else "lean", beta=0.25, policy_file=str(shipped) if learned else None
    )
    console.print_json(decision.model_dump_json())
    console.rule("2. predict: gpt2_medium, batch 4, on 16 GPUs (two servers): the fastest data x tensor x pipeline split")
    prediction = predict_placement(resolve_graph("gpt2_medium"), "dgx8x8", 16)
    console.print_json(prediction.model_dump_json(exclude={"devices"}))
    console.rule("3. evaluate against the heuristics: dgx8x8, an EDF queue, job lengths spread 100-fold, PAC-ML's graphs, 5 seeds")
    policies = (["learned"] if learned else []) + ["para_min+best_fit", "lean", "lean@edf", "lean:admit=0.9"]
    workload = WorkloadSpec(
        graphs=list(PACML_GRAPHS), beta_dists=["A", "B", "C", "D"], load=0.9, jobs=jobs, queue="edf-bf", size="loguniform:0.1:10"
    )
    policy_file = str(shipped) if learned else None
    config = EvaluationConfig(cluster="dgx8x8", workload=workload, seeds=5, policies=policies, policy_file=policy_file)
    with progress_bar() as bar:
        task = bar.add_task("simulating", total=total_decisions(config))
        result = run_evaluation(config, on_task=lambda jobs: bar.advance(task, jobs), workers=min(4, os.cpu_count() or 1))
    paths = write_results(result, out) + plot_all(result, out)
    console.print(summary_table(result))
    console.print("wrote " + ", ".join(str(p) for p in paths))
