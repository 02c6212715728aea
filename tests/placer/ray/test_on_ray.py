"""placer's decisions carried out on a real local Ray cluster (3 nodes x 2 declared GPUs): where the
bundles land, exclusive devices, release, refusal, Ray's timeout, a killed driver's lease, step times."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from placer.ray import HttpService, LocalService, PlacementRefusedError, PlacementTimeoutError, place_job
from tests.placer.ray.conftest import REPO
from tests.placer.toys import chain

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def local(ray_cluster):
    service = LocalService(ray_cluster.cluster, "fixed:2+spread")
    yield service
    service.close()


def bundle_nodes(job) -> list[str]:
    from ray.util.placement_group import placement_group_table

    table = placement_group_table(job.placement_group)["bundles_to_node_id"]
    return [table[i] for i in range(len(table))]


def where_workers_run(job) -> list[str]:
    import ray

    here = ray.remote(lambda: ray.get_runtime_context().get_node_id())
    return ray.get([here.options(**job.worker_options(w.rank)).remote() for w in job.workers])


def test_the_cluster_is_read_from_the_nodes(ray_cluster):
    assert [n.gpus for n in ray_cluster.nodes] == [2, 2, 2]
    assert sorted(n.accelerator for n in ray_cluster.nodes) == ["A100", "V100", "V100"]
    assert ray_cluster.cluster.num_devices == 6 and ray_cluster.cluster.num_servers == 3


def test_bundles_and_workers_land_on_the_nodes_placer_chose(ray_cluster, local):
    with place_job(local, ray_cluster, chain(), beta=1.0, timeout_s=30) as job:
        chosen = [ray_cluster.node_of(d).node_id for d in job.decision.devices]
        assert len(set(chosen)) == 2  # spread: two devices on two nodes
        assert bundle_nodes(job) == chosen
        assert where_workers_run(job) == chosen
        assert [(w.rank, w.world_size) for w in job.workers] == [(0, 2), (1, 2)]


def test_jobs_never_share_a_device_a_fourth_is_refused_and_release_frees(ray_cluster, local):
    jobs = [place_job(local, ray_cluster, chain(), beta=1.0, timeout_s=30) for _ in range(3)]
    devices = [d for job in jobs for d in job.decision.devices]
    assert sorted(devices) == sorted(ray_cluster.cluster.device_index)  # 3 x 2 devices: every one, none twice
    with pytest.raises(PlacementRefusedError, match=r"placer refused the job \(does_not_fit\)"):
        place_job(local, ray_cluster, chain(), beta=1.0, timeout_s=30)
    jobs[0].release()
    assert local.occupancy().devices_free == 2
    again = place_job(local, ray_cluster, chain(), beta=1.0, timeout_s=30)
    assert sorted(again.decision.devices) == sorted(jobs[0].decision.devices)
    for job in [*jobs[1:], again]:
        job.release()
    assert local.occupancy().devices_free == 6


def test_devices_held_outside_placer_time_out_with_one_line_and_free_the_reservation(ray_cluster, local):
    import ray

    hog = ray.util.placement_group([{"GPU": 2.0}] * 3, strategy="SPREAD")  # every GPU, taken behind placer's back
    ray.get(hog.ready(), timeout=30)
    try:
        with pytest.raises(
            PlacementTimeoutError, match=r"Ray did not reserve s\d-g\d on node \w+, s\d-g\d on node \w+ within 1 s"
        ) as caught:
            place_job(local, ray_cluster, chain(), beta=1.0, timeout_s=1.0)
        assert "\n" not in str(caught.value)
        assert local.occupancy().devices_free == 6
    finally:
        ray.util.remove_placement_group(hog)


def test_step_times_reach_the_service_and_a_lease_is_kept_while_the_driver_lives(ray_cluster, http_url):
    service = HttpService(http_url)
    with place_job(service, ray_cluster, chain(), beta=1.0, lease_s=3.0, timeout_s=30) as job:
        time.sleep(
            6.5
        )  # more than twice the lease: renewed in the background (every second; a loaded CI machine can miss a shorter window)
        assert [j.job_id for j in service.occupancy().jobs] == [job.job_id] and job.lease_error is None
        state = job.report(4.0)
        assert state.measurements == 1
    assert service.calibration().measurements == 1
    assert service.occupancy().devices_free == 6


DRIVER = """
import sys, time
from placer.ray import HttpService, connect, place_job
from tests.placer.ray.conftest import toy_template
from tests.placer.toys import chain
job = place_job(HttpService(sys.argv[2]), connect(sys.argv[1], template=toy_template()), chain(), beta=1.0, lease_s=2.0, timeout_s=30)
print(job.job_id, job.placement_group.id.hex(), flush=True)
time.sleep(600)
"""


def test_a_killed_driver_frees_its_devices_when_its_lease_runs_out(ray_address, ray_cluster, http_url):
    from ray.util.placement_group import placement_group_table

    service = HttpService(http_url)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, ray_address, http_url], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        job_id, group_id = driver.stdout.readline().split()
        assert [j.job_id for j in service.occupancy().jobs] == [job_id]
        assert placement_group_table()[group_id]["state"] == "CREATED"
    finally:
        driver.kill()
        driver.wait(10)
    killed = time.monotonic()
    while service.occupancy().devices_free < 6 or placement_group_table()[group_id]["state"] != "REMOVED":
        assert time.monotonic() - killed < 15, "the killed driver's devices were not freed"
        time.sleep(0.2)
    assert time.monotonic() - killed > 0.5  # the lease (2 s, renewed every 0.67 s) ran out: nothing released them at once


def test_ray_cluster_writes_the_file_placer_serve_reads(ray_address, tmp_path):
    out = tmp_path / "ray.toml"
    done = subprocess.run(
        [sys.executable, "-m", "placer", "ray-cluster", "--address", ray_address, "--template", "mixed", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    from placer.cluster.topology import load_cluster

    cluster = load_cluster(out)
    assert (cluster.name, cluster.num_servers, cluster.num_devices) == ("mixed-ray", 3, 6)
    assert sorted(cluster.device_type) == ["A100-80GB"] * 2 + ["V100-16GB"] * 4
    assert out.read_text().count("GPUs (A100)") == 1 and out.read_text().count("GPUs (V100)") == 2


def test_a_service_on_another_cluster_is_named_in_one_line(ray_cluster):
    from placer.ray import RayClusterError, check_service
    from tests.placer.toys import toy_cluster

    check_service(LocalService(ray_cluster.cluster), ray_cluster)  # the same devices: no error
    with pytest.raises(RayClusterError, match="the service's cluster has 8 devices on 2 servers, Ray's GPU nodes 6 on 3"):
        check_service(LocalService(toy_cluster(2, 4)), ray_cluster)


def test_a_lease_that_ran_out_frees_the_devices_and_release_still_removes_the_group(ray_cluster, local):
    from ray.util.placement_group import placement_group_table

    job = place_job(local, ray_cluster, chain(), beta=1.0, lease_s=1.0, timeout_s=30)
    job._stop.set()  # the renewals stop, as in a driver that hangs
    time.sleep(1.6)
    assert local.occupancy().devices_free == 6  # the lease ran out
    job.release()  # the lost lease is no error; the placement group goes
    assert placement_group_table(job.placement_group)["state"] == "REMOVED"


def test_the_service_refusing_a_call_is_one_line(ray_cluster, http_url):
    from placer.ray import ServiceError

    service = HttpService(http_url)
    with place_job(service, ray_cluster, chain(), beta=1.0, timeout_s=30) as job:
        with pytest.raises(ServiceError, match=r"^POST /v1/jobs/\w+/step-times: 422 ") as caught:
            job.report(1e-9)
        assert "\n" not in str(caught.value)
    with pytest.raises(ServiceError, match="cannot reach the placement service at http://127.0.0.1:1"):
        HttpService("http://127.0.0.1:1", timeout_s=2).occupancy()


def _touch_after(path: str, delay_s: float) -> str:
    """A Ray task: wait ``delay_s`` seconds, then create ``path``."""
    import time

    time.sleep(delay_s)
    Path(path).touch()
    return path


def test_a_map_on_ray_ended_early_cancels_the_tasks_not_read(ray_address, tmp_path):
    from placer.common.pool import results_in_order

    calls = [(str(tmp_path / f"task{i}"), 0.0 if i == 0 else 6.0) for i in range(5)]
    with pytest.raises(RuntimeError, match="the caller stops"):
        with results_in_order(_touch_after, calls, ray=ray_address) as results:
            assert next(results) == calls[0][0]
            raise RuntimeError("the caller stops")  # the others were submitted at once: cancelled, none finishes
    time.sleep(9.0)  # past when any of them would have finished
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task0"]
