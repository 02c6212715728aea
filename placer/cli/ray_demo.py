"""``placer ray-demo``: place a small PyTorch DDP job with placer and run it on a local Ray cluster.

placer ray-demo                                   # 3 local Ray nodes x 1 declared GPU, the service in-process
placer ray-demo --http                            # placer serve's HTTP API on a loopback port between them
placer ray-demo --resize-to 2                     # start on one device, then move to two: step times before and after
"""

from __future__ import annotations

import contextlib
import statistics
from pathlib import Path
from typing import Annotated

import typer

from placer.cli.app import app, console, err_console
from placer.common.errors import MissingDependencyError


@contextlib.contextmanager
def serving(cluster, policy: str):
    """The URL of placer serve's app (``policy`` on ``cluster``, in memory), served on a loopback port until the block ends."""
    import threading
    import time

    import uvicorn

    from placer.baselines.registry import PolicyContext, make_policy
    from placer.serve.http import create_app

    app_ = create_app(cluster, make_policy(policy, PolicyContext(cluster)))
    server = uvicorn.Server(uvicorn.Config(app_, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


def say(text: str) -> None:
    console.print(text, soft_wrap=True, highlight=False)


@app.command("ray-demo")
def ray_demo(
    nodes: Annotated[int, typer.Option(min=1, max=3, help="local Ray nodes to start")] = 3,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=4, help="GPUs each node declares (the job trains on CPU)")] = 1,
    policy: Annotated[
        str | None, typer.Option(help="the service's policy (default fixed:2: two devices, on two nodes here; fixed:1 with --resize-to)")
    ] = None,
    steps: Annotated[int, typer.Option(min=3, max=1000, help="training steps")] = 30,
    beta: Annotated[float, typer.Option(min=0.01, max=1.0, help="deadline as a fraction of the sequential JCT")] = 1.0,
    http: Annotated[bool, typer.Option("--http", help="ask placer serve over HTTP (started here on a loopback port)")] = False,
    timeout_s: Annotated[float, typer.Option(min=1.0, help="seconds to wait for Ray to reserve the devices")] = 60.0,
    resize_to: Annotated[
        int | None, typer.Option(min=1, max=12, help="after the steps, resize the job to this many devices and train as many again")
    ] = None,
) -> None:
    """Start a local Ray cluster, place a tiny DDP job with placer, run it, report its step times and show the refit;
    with --resize-to, move it to another degree (checkpoint, new placement group, restart) and run it again."""
    from placer.common.on_ray import import_ray
    from placer.ray import HttpService, LocalService, check_service, connect, place_job
    from placer.ray.demo import await_refit, demo_graph, demo_template, report_chunks, run_ddp, start_local_cluster

    ray = import_ray()
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MissingDependencyError("placer ray-demo trains with PyTorch: pip install -e '.[torch]'") from None
    policy = policy or ("fixed:1" if resize_to else "fixed:2")
    local = start_local_cluster(nodes, gpus_per_node)
    with contextlib.ExitStack() as stack:
        stack.callback(local.shutdown)
        stack.callback(ray.shutdown)
        ray_cluster = connect(template=demo_template())
        say(f"Ray cluster: {len(ray_cluster.nodes)} nodes -> placer cluster {ray_cluster.cluster}")
        client: HttpService | LocalService
        if http:
            client = HttpService(stack.enter_context(serving(ray_cluster.cluster, policy)))
            check_service(client, ray_cluster)
        else:
            client = stack.enter_context(contextlib.closing(LocalService(ray_cluster.cluster, policy)))
        graph = demo_graph(steps)
        with place_job(client, ray_cluster, graph, beta=beta, lease_s=30.0, timeout_s=timeout_s) as job:
            d = job.decision
            predicted_ms = (d.predicted_iteration_s or 0.0) * 1e3
            say(f"placement: {d.degree} devices {d.devices} (job {job.job_id[:8]}), predicted {predicted_ms:.2f} ms/step")
            for w in job.workers:
                say(f"  rank {w.rank}/{w.world_size}: {w.device} on Ray node {w.node_id[:8]}")
            result = run_ddp(job, steps)
            for ran in result.workers:
                say(f"  rank {ran['rank']} ran on node {ran['node_id'][:8]}, Ray GPU ids {ran['gpu_ids']}")
            refits = client.calibration().refits
            for median, refused in report_chunks(job, result.step_times):
                say(
                    f"measured {median * 1e3:.2f} ms/step (median of {steps // 3} steps): "
                    + (f"refused: {refused}" if refused else "reported")
                )
            refit = await_refit(client.calibration, refits)  # the refit these reports queued (bounded): landed, or why not
            say(refit.line())
            if resize_to is not None:
                resized_steps(job, result, resize_to, steps, timeout_s)
            devices, measured = tuple(d.devices), statistics.median(result.step_times) * 1e3
        again = client.place(graph, beta=1.0)
        if again.accepted:
            client.release(again.job_id or "")
            before, after = (d.predicted_iteration_s or 0.0) * 1e3, (again.predicted_iteration_s or 0.0) * 1e3
            what = "refitted prediction" if refit.landed else "prediction, not refitted"
            say(
                f"{what}: {after:.2f} ms/step on {again.devices} (before the reports: {before:.2f} on {list(devices)}; "
                f"measured {measured:.2f})"
            )


def resized_steps(job, before, degree: int, steps: int, timeout_s: float) -> None:
    """Resize ``job`` (which ran ``before``) to ``degree`` devices, restart its workers from rank 0's weights there, report
    the step times after the move and print both."""
    import time

    from placer.ray.demo import report_chunks, run_ddp

    was, asked = job.devices, time.time()
    moved = job.resize(degree, checkpoint=lambda: before.state, timeout_s=timeout_s)  # the workers returned their state
    r = moved.decision
    say(
        f"resize to {r.degree}: {was} -> {r.devices}, predicted {r.previous_iteration_s * 1e3:.2f} -> "
        f"{r.predicted_iteration_s * 1e3:.2f} ms/step, pause {r.resize_pause_s:.1f} s; Ray swapped the groups in {moved.ready_s:.2f} s"
    )
    after = run_ddp(job, steps, state=moved.state)
    for ran in after.workers:
        say(f"  rank {ran['rank']} ran on node {ran['node_id'][:8]}, Ray GPU ids {ran['gpu_ids']}")
    for median, refused in report_chunks(job, after.step_times):
        say(f"measured {median * 1e3:.2f} ms/step on {r.degree} devices: " + (f"refused: {refused}" if refused else "reported"))
    paused = after.span[0] - asked - statistics.median(after.step_times)  # to the first step on the new devices, less a step
    say(
        f"step times: {statistics.median(before.step_times) * 1e3:.2f} ms/step on {len(was)} devices before, "
        f"{statistics.median(after.step_times) * 1e3:.2f} after on {r.degree} (medians); the move took {paused:.1f} s "
        f"(predicted pause {r.resize_pause_s:.1f}); steps {before.state['steps']} -> {after.state['steps']}, "
        f"loss {before.state['loss']:.4f} -> {after.state['loss']:.4f}"
    )


@app.command("ray-cluster")
def ray_cluster_file(
    address: Annotated[str | None, typer.Option(help="Ray cluster address (default: RAY_ADDRESS, or start a local Ray)")] = None,
    template: Annotated[str, typer.Option(help="cluster preset or TOML file: the links and device types of the nodes")] = "pacml",
    out: Annotated[Path | None, typer.Option(help="write the cluster file here (default: print it)")] = None,
    name: Annotated[str | None, typer.Option(help="the cluster's name (default: <template>-ray)")] = None,
) -> None:
    """Read a running Ray cluster's GPU nodes into a placer cluster file, for placer serve --cluster."""
    from placer.calibration.toml_writer import cluster_toml
    from placer.common.atomic import write_atomic
    from placer.ray import connect

    found = connect(address, template=template, name=name)
    comment = [f"Read from Ray by placer ray-cluster (template {template}): server k is the k-th GPU node below."]
    comment += [
        f"s{k}: node {n.node_id} at {n.address}, {n.gpus} GPUs ({n.accelerator or 'type not reported'})" for k, n in enumerate(found.nodes)
    ]
    text = cluster_toml(found.cluster.spec, comment)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_atomic(out, text)
        err_console.print(f"wrote {out}: {found.cluster}")
