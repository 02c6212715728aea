"""Resizing a running job (issue 52, item 4): the clients' ``resize``, and on the package's real local Ray cluster (3 nodes
x 2 declared GPUs) the service's reservation swapped, the placement group moved to the new devices and the DDP workers
restarted there from rank 0's checkpoint."""

from __future__ import annotations

import statistics

import pytest

from placer.baselines.registry import make_heuristic
from placer.ray import HttpService, LocalService, ServiceError, place_job
from placer.serve.errors import DevicesBusyError
from tests.placer.toys import chain, toy_cluster


@pytest.fixture
def one_device_service(ray_cluster):
    """A placer serve placing every job on one device (fixed:1), over loopback HTTP, on ``ray_cluster``'s devices."""
    pytest.importorskip("uvicorn")
    from placer.serve.http import create_app
    from tests.placer.live_server import loopback, running

    with running(loopback(create_app(ray_cluster.cluster, make_heuristic("fixed:1")))) as port:
        yield HttpService(f"http://127.0.0.1:{port}")


def test_the_clients_resize_and_a_refusal_is_one_line():
    from placer.serve.http import create_app
    from tests.placer.live_server import loopback, running

    local = LocalService(toy_cluster(2, 2), "fixed:1")
    try:
        job = local.place(chain(), beta=1.0)
        grown = local.resize(job.job_id or "", 2)
        assert (grown.degree, grown.moved, grown.devices[0]) == (2, True, "s0-g0")
        other = local.place(chain(), beta=1.0)
        with pytest.raises(DevicesBusyError, match="are held by another job"):
            local.resize(job.job_id or "", devices=other.devices)
    finally:
        local.close()
    with running(loopback(create_app(toy_cluster(2, 2), make_heuristic("fixed:1")))) as port:
        service = HttpService(f"http://127.0.0.1:{port}")
        job, other = service.place(chain(), beta=1.0), service.place(chain(), beta=1.0)
        moved = service.resize(job.job_id or "", devices=["s1-g1"], idempotency_key="m-1")
        assert moved.devices == ["s1-g1"] and service.resize(job.job_id or "", devices=["s1-g1"], idempotency_key="m-1") == moved
        with pytest.raises(ServiceError, match=r"^POST /v1/jobs/\w+/resize: 409 .*s0-g1 are held by another job") as caught:
            service.resize(job.job_id or "", devices=["s1-g1", *other.devices])
        assert "\n" not in str(caught.value)
        with pytest.raises(ServiceError, match="^resize: Value error, give exactly one of 'degree' and 'devices'$"):
            service.resize(job.job_id or "")


@pytest.mark.slow  # three DDP runs on Ray workers: 30-60 s here
@pytest.mark.timeout(300)
def test_a_job_resized_on_ray_moves_its_group_and_restarts_its_workers_from_the_checkpoint(ray_cluster, one_device_service):
    pytest.importorskip("torch")
    from ray.util.placement_group import placement_group_table

    from placer.ray.demo import WARMUP_STEPS, demo_graph, run_ddp
    from tests.placer.ray.test_on_ray import bundle_nodes

    service, steps = one_device_service, 6
    with place_job(service, ray_cluster, demo_graph(steps), beta=1.0, lease_s=30.0, timeout_s=60) as job:
        assert job.devices == ["s0-g0"]
        runs = [run_ddp(job, steps)]
        groups = [job.placement_group]
        for target in ({"degree": 2}, {"devices": ["s1-g0", "s2-g0"]}):  # grow by a degree, then move to two other nodes
            moved = job.resize(**target, checkpoint=lambda: runs[-1].state, timeout_s=60)
            assert moved.decision.moved and job.devices == moved.decision.devices and len(job.devices) == 2
            chosen = [ray_cluster.node_of(d).node_id for d in job.devices]
            assert bundle_nodes(job) == chosen  # the new group is pinned to the new devices' nodes
            assert placement_group_table(groups[-1])["state"] == "REMOVED"
            assert [j.devices for j in service.occupancy().jobs] == [job.devices]  # the service holds the new devices
            groups.append(job.placement_group)
            runs.append(run_ddp(job, steps, state=moved.state))
            assert sorted(w["node_id"] for w in runs[-1].workers) == sorted(chosen)  # the workers restarted there
            assert runs[-1].state["steps"] == runs[-2].state["steps"] + WARMUP_STEPS + steps  # from the checkpoint, not scratch
            job.report(statistics.median(runs[-1].step_times))  # on the new devices
            print(f"{moved.decision.previous_devices} -> {job.devices}: Ray swapped the groups in {moved.ready_s:.2f} s")
        assert job.resizes[0].devices == ["s0-g0", "s0-g1"]  # degree 2: its own device and the next on its node
        for run, where in zip(runs, ("s0-g0", "s0-g0 s0-g1", "s1-g0 s2-g0"), strict=True):
            print(f"{where}: {statistics.median(run.step_times) * 1e3:.2f} ms/step (median), loss {run.state['loss']:.4f}")
        print(f"paused {runs[1].span[0] - runs[0].span[1]:.1f} s and {runs[2].span[0] - runs[1].span[1]:.1f} s between the runs")
    assert service.occupancy().devices_free == 6  # (the reports were taken: 202; the toy template's prediction is far off)
