"""``placer ray-demo``: a small PyTorch data-parallel job placed by placer and run by Ray.

A local Ray cluster of a few nodes, each declaring GPUs it does not have (the job trains on CPU with
gloo), is read into a placer cluster; the service (in this process, or a running ``placer serve``)
places the job; Ray runs one DDP worker per chosen device inside the placement group; the measured
step times go back to the service, which refits its cost model, and the refitted prediction of
the same job is printed. With a resize (``placer ray-demo --resize-to 2``) the job then moves: rank 0's
weights are the checkpoint (the workers return them), the placement group moves to the new devices
and the workers restart there from it; step times before and after are printed. torch is imported
by the functions that train, never at import time.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placer.cluster.topology import ClusterSpec, parse_cluster_spec
from placer.common.errors import PlacerError
from placer.common.on_ray import import_ray
from placer.graphs.job_graph import JobGraph
from placer.ray.job import RayJob
from placer.serve.schemas import CalibrationState

WIDTH, BATCH, CLASSES = 256, 512, 10

# The demo's GPUs are CPU cores training with gloo over loopback: a cluster file that says so.
DEMO_TEMPLATE = {
    "name": "ray-demo",
    "device_types": {"cpu-gloo": {"memory_bytes": 4e9, "speed": 0.005}},
    "servers": [{"count": 1, "devices_per_server": 1, "device_type": "cpu-gloo"}],
    "links": {"intra_server": {"bandwidth_Bps": 5e9, "latency_s": 50e-6}, "inter_server": {"bandwidth_Bps": 2e9, "latency_s": 100e-6}},
    "overheads": {"iteration_s": 0.0002, "sync_s": 0.0002},
    "resize": {"restart_s": 5.0},  # new Ray workers and a gloo rendezvous on a busy machine: a guess, like the speed
}


def demo_template() -> ClusterSpec:
    return parse_cluster_spec(DEMO_TEMPLATE, source="placer.ray.demo")


def start_local_cluster(nodes: int = 3, gpus_per_node: int = 2):
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` nodes on this machine, one CPU and ``gpus_per_node`` declared GPUs each,
    with this process connected to it; its workers import this checkout of placer. Call ``.shutdown()`` (after ``ray.shutdown()``)."""
    ray = import_ray()
    from ray.cluster_utils import Cluster

    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)  # the raylets' workers inherit it
    args: dict[str, Any] = {"num_cpus": 1, "num_gpus": gpus_per_node, "include_dashboard": False, "object_store_memory": 80 * 1024 * 1024}
    cluster = Cluster(initialize_head=True, head_node_args=args)
    for _ in range(nodes - 1):
        cluster.add_node(**args)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return cluster


def tiny_model():
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, CLASSES)
    )


def demo_graph(steps: int) -> JobGraph:
    """The training graph of :func:`tiny_model` on a batch of :data:`BATCH`, ``steps`` iterations."""
    import torch

    from placer.graphs.torch_import import from_torch

    return from_torch(tiny_model(), torch.randn(BATCH, WIDTH), iterations=steps, name="ray-demo-mlp")


def free_port() -> tuple[str, int]:
    """This node's address and a free TCP port on it (rank 0's rendezvous)."""
    import socket

    import ray

    with socket.socket() as s:
        s.bind(("", 0))
        return ray.util.get_node_ip_address(), s.getsockname()[1]


# Steps run before the timed ones: a fresh process group's first steps are slower (gloo's connections and buffers, the
# allocator); with one dropped, the median of the next three still came out 2.8x the later ones on a 2-core machine.
WARMUP_STEPS = 4


def ddp_worker(rank: int, world_size: int, address: str, port: int, steps: int, state: dict | None = None) -> dict:
    """Train :func:`tiny_model` with DistributedDataParallel (gloo) as ``rank`` of ``world_size``, from the checkpoint
    ``state`` (None: from scratch); seconds per step of ``steps`` steps after :data:`WARMUP_STEPS` untimed ones, when the
    first and last steps ended (Unix time) and, from rank 0, the checkpoint to go on from (``state``: weights and steps
    done, the warm-up's included)."""
    from datetime import timedelta

    import ray
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{address}:{port}", rank=rank, world_size=world_size, timeout=timedelta(seconds=60))
    try:
        torch.manual_seed(0)
        net = tiny_model()
        if state is not None:
            net.load_state_dict(state["model"])
        model = torch.nn.parallel.DistributedDataParallel(net)  # broadcasts rank 0's weights
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        local = BATCH // world_size  # data parallel: the global batch split over the ranks
        x, y = torch.randn(local, WIDTH), torch.randint(0, CLASSES, (local,))
        times, ended = [], []
        for _ in range(WARMUP_STEPS + steps):
            start = time.perf_counter()
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            times.append(time.perf_counter() - start)
            ended.append(time.time())
    finally:
        dist.destroy_process_group()
    done = (state or {}).get("steps", 0) + WARMUP_STEPS + steps
    checkpoint = {"model": net.state_dict(), "steps": done, "loss": loss.item()} if rank == 0 else None
    node = ray.get_runtime_context().get_node_id()
    out = {"rank": rank, "node_id": node, "gpu_ids": ray.get_gpu_ids(), "step_times": times[WARMUP_STEPS:]}
    return out | {"first_step_at": ended[0], "last_step_at": ended[-1], "state": checkpoint}


@dataclass(frozen=True)
class RunResult:
    """What the workers of one job measured: per rank, its node, Ray's GPU ids and seconds per step."""

    workers: list[dict]

    @property
    def step_times(self) -> list[float]:
        """The job's seconds per step: the slowest rank's, step by step (DDP steps in lockstep)."""
        return [max(ranks) for ranks in zip(*(w["step_times"] for w in self.workers), strict=True)]

    @property
    def state(self) -> dict:
        """Rank 0's checkpoint after the last step: the weights and the steps done (a resize restarts from it)."""
        return self.workers[0]["state"]

    @property
    def span(self) -> tuple[float, float]:
        """When the first step ended and the last step ended (Unix time; every rank's last)."""
        return min(w["first_step_at"] for w in self.workers), max(w["last_step_at"] for w in self.workers)


def run_ddp(job: RayJob, steps: int, state: dict | None = None, timeout_s: float = 240.0) -> RunResult:
    """Run one :func:`ddp_worker` per device of ``job`` in its placement group (from the checkpoint ``state``, if one)
    and wait for them, at most ``timeout_s`` seconds (then :class:`RayRunTimeoutError`, its workers cancelled: a rank
    that never started would leave the others waiting at the rendezvous for good)."""
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    rendezvous = ray.remote(free_port).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(job.workers[0].node_id, soft=False)
    )
    started = time.monotonic()
    refs = [rendezvous.remote()]
    try:
        address, port = ray.get(refs[0], timeout=timeout_s)
        worker = ray.remote(ddp_worker)
        options = [job.worker_options(w.rank) for w in job.workers]
        refs = [
            worker.options(**o).remote(w.rank, w.world_size, address, port, steps, state) for o, w in zip(options, job.workers, strict=True)
        ]
        results = ray.get(refs, timeout=max(timeout_s - (time.monotonic() - started), 1.0))
    except ray.exceptions.GetTimeoutError:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise RayRunTimeoutError(f"the DDP workers on {', '.join(job.devices)} did not finish within {timeout_s:g} s") from None
    return RunResult(sorted(results, key=lambda r: r["rank"]))


class RayRunTimeoutError(PlacerError):
    """A run of DDP workers on Ray did not finish in time (one that never started leaves the others at the rendezvous)."""


def report_chunks(job: RayJob, step_times: list[float], chunks: int = 3) -> list[tuple[float, str | None]]:
    """Report the median of each of ``chunks`` runs of consecutive steps (each a measurement the service keeps).

    Each median comes with None, or the one-line reason the service refused it (a median 1.5x from an
    earlier one of the same job is refused: a busy machine can do that).
    """
    size = max(len(step_times) // chunks, 1)
    medians = [statistics.median(step_times[i : i + size]) for i in range(0, size * chunks, size) if step_times[i : i + size]]
    answers: list[tuple[float, str | None]] = []
    for median in medians:
        try:
            job.report(median)
            answers.append((median, None))
        except PlacerError as exc:
            answers.append((median, str(exc)))
    return answers


REFIT_WAIT_S = 120.0  # the first refit spawns its worker process: 12 s on a busy 2-core machine


@dataclass(frozen=True)
class RefitWait:
    """What became of the refit a job's reports queued: the calibration ``state`` last read, the refits counted
    ``before`` the reports, and whether the wait gave up (``timed_out``, after ``waited_s``) with a refit still pending."""

    state: CalibrationState
    before: int
    timed_out: bool = False
    waited_s: float = 0.0

    @property
    def landed(self) -> bool:
        """Whether a refit finished since the reports (the model in use now is fitted to them)."""
        return self.state.refits > self.before

    def line(self) -> str:
        """One line saying what the refit did; when none landed, plainly why (the prediction is then the model's before)."""
        s = self.state
        if self.landed:
            fitted = ", ".join(f"{k} = {v:.3g}" for k, v in s.fitted.items()) or "nothing"
            error = "" if s.median_error is None else f", median error {s.median_error:.1%}"
            return f"refit: {s.refits} refits of {s.measurements} measurements, fitted {fitted}{error}"
        if self.timed_out:
            why = f"still running after {self.waited_s:g} s ({s.measurements} measurements kept)"
        elif s.needed is not None and s.measurements < s.needed:
            held = f" ({len(s.suspects)} held as suspect)" if s.suspects else ""
            why = f"{s.measurements} measurements kept{held}, a fit needs {s.needed}"
        elif s.last_error:
            why = f"it failed: {' '.join(s.last_error.split())[:300]}"
        else:
            why = f"no report was kept ({len(s.suspects)} held as suspect)"
        return f"refit: not landed, {why}; the model in use is still the one before the reports"


def await_refit(
    calibration: Callable[[], CalibrationState], before: int, timeout_s: float = REFIT_WAIT_S, poll_s: float = 0.2
) -> RefitWait:
    """Wait for the refit that reports sent after ``calibration()`` showed ``before`` refits queued: poll until no refit
    is pending (a kept report marks one pending before it is answered, so none pending means it has run, or none was
    queued), or ``timeout_s`` passes."""
    start = time.monotonic()
    while True:
        state = calibration()
        waited = time.monotonic() - start
        if not state.pending or waited > timeout_s:
            return RefitWait(state, before, timed_out=state.pending, waited_s=round(waited, 1))
        time.sleep(poll_s)
