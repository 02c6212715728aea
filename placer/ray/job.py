"""A placer decision carried out by Ray: a placement group pinned to the chosen nodes, one worker per device.

    ray_cluster = placer.ray.connect("HEAD:6379", template="dgx8x8")
    service = placer.ray.HttpService("http://placer.internal:8000", token=...)
    with placer.ray.place_job(service, ray_cluster, graph, beta=0.5, lease_s=60) as job:
        refs = [train.options(**job.worker_options(w.rank)).remote(w.rank, w.world_size) for w in job.workers]
        job.report(median(step_times(ray.get(refs))))

The service decides the degree and devices and reserves them; each device becomes one bundle
``{"GPU": 1}`` whose ``bundle_label_selector`` pins it to the Ray node of its server (the node-id
label Ray sets on every node). Placement group and reservation are held together and released
together (:meth:`RayJob.release`, or leaving the ``with`` block). With a lease the job renews it on
a background thread every third of ``lease_s``; a driver that dies stops renewing, the service
frees the devices when the lease runs out, and Ray removes the placement group with its driver.

:meth:`RayJob.resize` moves a running job: the service swaps its reservation, the caller's checkpoint hook
stops the workers and hands back their state, and the placement group is replaced by one on the new
devices, pinned the same way; the caller restarts its workers there from that state.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placer.api.types import PlacementDecision
from placer.common.errors import PlacerError
from placer.common.on_ray import first_line, import_ray
from placer.graphs.job_graph import JobGraph
from placer.ray.nodes import RayCluster, RayClusterError
from placer.ray.service import LeaseLostError, PlacementService
from placer.serve.schemas import ResizeDecision

NODE_LABEL = "ray.io/node-id"


class PlacementRefusedError(RayClusterError):
    """The service did not place the job (it does not fit now, or cannot meet its deadline)."""

    def __init__(self, decision: PlacementDecision) -> None:
        self.decision = decision
        fastest = f"; the fastest placement that fits takes {decision.predicted_jct_s:.4g} s" if decision.predicted_jct_s else ""
        super().__init__(
            f"placer refused the job ({decision.reason}): deadline {decision.deadline_s:.4g} s, "
            f"sequential {decision.sequential_jct_s:.4g} s{fastest}"
        )


class PlacementTimeoutError(RayClusterError):
    """Ray did not reserve the chosen devices in time (they are held outside placer, or a node is gone). ``state``: a
    resize's checkpoint (None for a placement)."""

    state: Any = None


@dataclass(frozen=True)
class Worker:
    """What one training process needs: its rank, the world size, its device (by placer name) and Ray node."""

    rank: int
    world_size: int
    device: str
    node_id: str


@dataclass(frozen=True)
class Resized:
    """A carried-out resize: the service's ``decision``, the ``state`` the checkpoint hook returned (the workers restart
    from it), the seconds the hook took (``checkpoint_s``) and the seconds Ray took to swap the placement groups
    (``ready_s``: the old removed, the new one on the new devices ready)."""

    decision: ResizeDecision
    state: Any
    checkpoint_s: float
    ready_s: float


class RayJob:
    """A placed job: the service's decision, the ready placement group and one :class:`Worker` per device."""

    def __init__(
        self,
        service: PlacementService,
        decision: PlacementDecision,
        placement_group,
        workers: list[Worker],
        lease_s,
        ray_cluster: RayCluster | None = None,
    ) -> None:
        self.service, self.decision, self.placement_group, self.workers = service, decision, placement_group, workers
        self.ray_cluster = ray_cluster  # to pin the placement group of a resize
        self.resizes: list[ResizeDecision] = []
        self.job_id: str = decision.job_id or ""
        self.lease_error: str | None = None
        self._released = False
        self._stop = threading.Event()
        self._keeper = None
        if lease_s is not None:
            self._keeper = threading.Thread(
                target=self._keep_lease, args=(lease_s / 3,), daemon=True, name=f"placer-lease-{self.job_id[:8]}"
            )
            self._keeper.start()

    @property
    def world_size(self) -> int:
        return len(self.workers)

    @property
    def devices(self) -> list[str]:
        """The devices the job holds now (its placement's, or its last resize's)."""
        return [w.device for w in self.workers]

    def worker_options(self, rank: int, *, num_cpus: float = 0) -> dict[str, Any]:
        """Keyword arguments for ``remote_fn.options(...)`` / ``Actor.options(...)``: run rank ``rank`` in its bundle with one GPU."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if not 0 <= rank < self.world_size:
            raise RayClusterError(f"rank {rank} is outside the job's world of {self.world_size}")
        strategy = PlacementGroupSchedulingStrategy(self.placement_group, placement_group_bundle_index=rank)
        return {"scheduling_strategy": strategy, "num_gpus": 1, "num_cpus": num_cpus}

    def report(self, step_time_s: float):
        """Report a measured seconds per training step to the service (its cost model refits to it)."""
        return self.service.report(self.job_id, step_time_s)

    def resize(
        self,
        degree: int | None = None,
        *,
        devices: list[str] | None = None,
        checkpoint: Callable[[], Any] | None = None,
        timeout_s: float = 60.0,
    ) -> Resized:
        """Move the job to ``degree`` devices (the service picks them) or to ``devices`` (by name), within its lease.

        1. The service swaps the reservation; a refusal (devices busy, the graph does not fit, the lease ran out) raises
           one line (:class:`~placer.ray.service.ServiceError` from a service over HTTP) and nothing changes: the
           workers go on.
        2. ``checkpoint()``, the caller's hook, runs once the move is granted: it stops the workers and returns the state
           they restart from (None, or no hook, when they have stopped and returned it already).
        3. The placement group is removed and one on the new devices made, pinned as :func:`place_job` pins, ready within
           ``timeout_s``; :attr:`workers` are then the new ranks, and the caller restarts its workers with
           :meth:`worker_options` from the state. A move onto the same devices keeps the group.

        When Ray cannot reserve the new devices in time the new group is removed and the reservation released, as
        :func:`place_job` does: :class:`PlacementTimeoutError`, whose ``state`` is the checkpoint (to place the job anew).
        """
        if self._released or self.ray_cluster is None:
            raise RayClusterError(f"job {self.job_id[:8]} is released or was not made by place_job: it cannot be resized")
        decision = self.service.resize(self.job_id, degree, devices=devices)
        start = time.monotonic()
        state = checkpoint() if checkpoint is not None else None
        checkpointed = time.monotonic()
        if decision.moved:
            ray = import_ray()
            ray.util.remove_placement_group(self.placement_group)
            resources, selectors, workers = bundles(decision, self.ray_cluster)
            name = f"placer-{self.job_id}-{len(self.resizes) + 1}"
            group = ray.util.placement_group(resources, strategy="PACK", bundle_label_selector=selectors, name=name)
            try:
                ray.get(group.ready(), timeout=timeout_s)
            except Exception as exc:  # GetTimeoutError, or the group failed
                self.placement_group = group
                self.release()  # removes the new group (the old one is gone) and releases the reservation
                error = PlacementTimeoutError(
                    f"Ray did not reserve {_where(workers)} for the resize within {timeout_s:g} s ({first_line(exc)}); "
                    "the reservation was released"
                )
                error.state = state
                raise error from None
            self.placement_group, self.workers = group, workers
        self.resizes.append(decision)
        return Resized(decision, state, checkpointed - start, time.monotonic() - checkpointed)

    def _keep_lease(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                self.service.renew(self.job_id)
            except PlacerError as exc:  # the lease ran out, the service is gone: nothing left to keep
                self.lease_error = str(exc)
                return

    def release(self) -> None:
        """Remove the placement group and release the reservation (once; a lease that ran out is not an error)."""
        if self._released:
            return
        self._released = True
        self._stop.set()
        import_ray().util.remove_placement_group(self.placement_group)
        with contextlib.suppress(LeaseLostError):  # the lease ran out: the service freed the devices already
            self.service.release(self.job_id)

    def __enter__(self) -> RayJob:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def check_service(service: PlacementService, ray_cluster: RayCluster) -> None:
    """A one-line :class:`RayClusterError` unless the service's devices are the ones read from Ray (same names, same servers)."""
    theirs = {d.device: d.server for d in service.occupancy().devices}
    ours = {name: int(ray_cluster.cluster.server_of[i]) for name, i in ray_cluster.cluster.device_index.items()}
    if theirs != ours:
        raise RayClusterError(
            f"the service's cluster has {len(theirs)} devices on {len(set(theirs.values()))} servers, Ray's GPU nodes "
            f"{len(ours)} on {len(ray_cluster.nodes)}: restart placer serve on the file placer ray-cluster writes"
        )


def bundles(decision: PlacementDecision | ResizeDecision, ray_cluster: RayCluster) -> tuple[list[dict], list[dict], list[Worker]]:
    """One ``{"GPU": 1}`` bundle per decided device, the label selector pinning it to its node, and the workers."""
    nodes = [ray_cluster.node_of(device) for device in decision.devices]
    workers = [
        Worker(rank, len(nodes), device, node.node_id) for rank, (device, node) in enumerate(zip(decision.devices, nodes, strict=True))
    ]
    return [{"GPU": 1.0} for _ in nodes], [{NODE_LABEL: node.node_id} for node in nodes], workers


def place_job(
    service: PlacementService,
    ray_cluster: RayCluster,
    graph: JobGraph,
    *,
    beta: float,
    lease_s: float | None = None,
    iterations: int | None = None,
    timeout_s: float = 60.0,
) -> RayJob:
    """Ask ``service`` to place ``graph`` (deadline ``beta`` x its sequential JCT), then reserve its devices in Ray.

    Returns once the placement group is ready. :class:`PlacementRefusedError` when the service
    refuses (nothing is held); :class:`PlacementTimeoutError` when Ray cannot reserve the devices
    within ``timeout_s`` (the placement group is removed and the reservation released).
    """
    ray = import_ray()
    decision = service.place(graph, beta=beta, lease_s=lease_s, iterations=iterations)
    if not decision.accepted:
        raise PlacementRefusedError(decision)
    try:
        resources, selectors, workers = bundles(decision, ray_cluster)
        group = ray.util.placement_group(resources, strategy="PACK", bundle_label_selector=selectors, name=f"placer-{decision.job_id}")
    except Exception:
        service.release(decision.job_id or "")
        raise
    try:
        ray.get(group.ready(), timeout=timeout_s)
    except Exception as exc:  # GetTimeoutError, or the group failed
        ray.util.remove_placement_group(group)
        service.release(decision.job_id or "")
        raise PlacementTimeoutError(
            f"Ray did not reserve {_where(workers)} within {timeout_s:g} s ({first_line(exc)}): are those GPUs held outside placer? "
            "The reservation was released"
        ) from None
    return RayJob(service, decision, group, workers, lease_s, ray_cluster)


def _where(workers: list[Worker]) -> str:
    return ", ".join(f"{w.device} on node {w.node_id[:8]}" for w in workers)
