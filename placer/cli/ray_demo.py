"""``placer ray-demo``: place a small PyTorch DDP job with placer and run it on a local Ray cluster.

placer ray-demo                                   # 3 local Ray nodes x 1 declared GPU, the service in-process
placer ray-demo --service http://127.0.0.1:8000   # ask a running placer serve (started on the demo's cluster file)
"""

from __future__ import annotations

from typing import Annotated

import typer

from placer.cli.app import app, console
from placer.common.errors import PlacerError


def say(text: str) -> None:
    console.print(text, soft_wrap=True, highlight=False)


@app.command("ray-demo")
def ray_demo(
    nodes: Annotated[int, typer.Option(min=1, max=3, help="local Ray nodes to start")] = 3,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=4, help="GPUs each node declares (the job trains on CPU)")] = 1,
    policy: Annotated[str, typer.Option(help="the in-process service's policy (fixed:2: two devices, on two nodes here)")] = "fixed:2",
    steps: Annotated[int, typer.Option(min=3, max=1000, help="training steps")] = 30,
    beta: Annotated[float, typer.Option(min=0.01, max=1.0, help="deadline as a fraction of the sequential JCT")] = 1.0,
    service: Annotated[str | None, typer.Option(help="URL of a running placer serve (default: the service in this process)")] = None,
    timeout_s: Annotated[float, typer.Option(min=1.0, help="seconds to wait for Ray to reserve the devices")] = 60.0,
) -> None:
    """Start a local Ray cluster, place a tiny DDP job with placer, run it, report its step times and show the refit."""
    from placer.ray import HttpService, LocalService, connect, place_job
    from placer.ray.demo import demo_graph, demo_template, report_chunks, run_ddp, start_local_cluster, wait_for_refit
    from placer.ray.nodes import import_ray

    ray = import_ray()
    try:
        import torch  # noqa: F401
    except ImportError:
        raise PlacerError("placer ray-demo trains with PyTorch: pip install -e '.[torch]'") from None
    local = start_local_cluster(nodes, gpus_per_node)
    try:
        ray_cluster = connect(template=demo_template())
        say(f"Ray cluster: {len(ray_cluster.nodes)} nodes -> placer cluster {ray_cluster.cluster}")
        client = HttpService(service) if service else LocalService(ray_cluster.cluster, policy)
        graph = demo_graph(steps)
        with place_job(client, ray_cluster, graph, beta=beta, lease_s=30.0, timeout_s=timeout_s) as job:
            d = job.decision
            say(f"placement: {d.degree} devices {d.devices} (job {job.job_id[:8]}), predicted {d.predicted_iteration_s * 1e3:.2f} ms/step")
            for w in job.workers:
                say(f"  rank {w.rank}/{w.world_size}: {w.device} on Ray node {w.node_id[:8]}")
            result = run_ddp(job, steps)
            for w in result.workers:
                say(f"  rank {w['rank']} ran on node {w['node_id'][:8]}, Ray GPU ids {w['gpu_ids']}")
            medians = report_chunks(job, result.step_times)
            say(f"measured: {', '.join(f'{m * 1e3:.2f}' for m in medians)} ms/step (medians of 3 runs of steps), reported")
            state = wait_for_refit(client.calibration, refits=1)
            say(f"refit: {state.refits} refits, fitted {state.fitted}, median error {state.median_error}")
            devices = tuple(d.devices)
        again = client.place(graph, beta=1.0)
        if again.accepted:
            client.release(again.job_id or "")
            before, after = d.predicted_iteration_s * 1e3, (again.predicted_iteration_s or 0) * 1e3
            say(f"refitted prediction: {after:.2f} ms/step on {again.devices} (before the reports: {before:.2f} on {list(devices)})")
    finally:
        ray.shutdown()
        local.shutdown()
