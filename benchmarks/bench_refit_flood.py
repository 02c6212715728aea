"""Does a flood of valid step-time reports slow placements down? (issue 30: p99 within 2x idle)

    python benchmarks/bench_refit_flood.py [--placements 300] [--smoke]

On ``dgx8x8`` with ``fixed:8``: 6 jobs of 3 graphs are placed, then the placement latency of
AlexNet (place + release, in process through the ASGI app) is measured idle, and again while a
second thread reports plausible step times (1.0-1.2x the prediction) for those jobs as fast as
the service takes them, so that the background refit runs back to back. Prints p50 / p99 of both,
their ratio, and how many reports were taken and refits made.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.cluster.topology import load_cluster
from placer.graphs.catalog import resolve_graph
from placer.serve.http import create_app

REPORTERS = ("resnet50", "vgg16", "bert_base")


def latencies(client: TestClient, body: dict, count: int) -> np.ndarray:
    """Seconds of each of ``count`` placements of ``body`` (each released at once)."""
    out = []
    for _ in range(count):
        start = time.perf_counter()
        job = client.post("/v1/placements", json=body).json()
        out.append(time.perf_counter() - start)
        client.delete(f"/v1/jobs/{job['job_id']}")
    return np.array(out)


def flood(client: TestClient, jobs: list[dict], stop: threading.Event, taken: list[int]) -> None:
    rng = np.random.default_rng(0)
    while not stop.is_set():
        job = jobs[int(rng.integers(len(jobs)))]
        report = {"step_time_s": job["predicted_iteration_s"] * float(rng.uniform(1.0, 1.2))}
        if client.post(f"/v1/jobs/{job['job_id']}/step-times", json=report).status_code == 202:
            taken[0] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placements", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="a few placements, to check the script runs")
    args = parser.parse_args()
    count = 10 if args.smoke else args.placements
    with TestClient(create_app(load_cluster("dgx8x8"), make_heuristic("fixed:8"))) as client:
        body = {"graph": resolve_graph("alexnet").to_dict(), "beta": 1.0}
        placed = [client.post("/v1/placements", json={"graph": resolve_graph(g).to_dict(), "beta": 1.0}).json() for g in REPORTERS * 2]
        jobs = [job for job in placed if job["accepted"]]
        latencies(client, body, 5)  # warm the caches
        idle = latencies(client, body, count)
        stop, taken = threading.Event(), [0]
        reporter = threading.Thread(target=flood, args=(client, jobs, stop, taken))
        reporter.start()
        time.sleep(0.5)
        busy = latencies(client, body, count)
        stop.set()
        reporter.join()
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
    p = {name: (np.percentile(x, 50) * 1e3, np.percentile(x, 99) * 1e3) for name, x in (("idle", idle), ("flood", busy))}
    print(f"placements: {count} idle, {count} during the flood; reports taken {taken[0]}, kept {state['measurements']}")
    for name, (p50, p99) in p.items():
        print(f"  {name:<6} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    print(f"p99 flood / idle: {p['flood'][1] / p['idle'][1]:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
