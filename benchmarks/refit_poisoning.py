"""Can one client steer the service's online refit? (issue 30)

    python benchmarks/refit_poisoning.py

On ``dgx8x8`` with the ``fixed:16`` heuristic (every job spans two servers): predict three
bystander graphs, place 4 ResNet-50 jobs, report 3 step times each ``FACTOR`` x their prediction
(30x: plausible but wrong; 1000x: absurd, one job), refit, and print what moved: the constants
fitted, the suspects held, the bystanders' and ResNet-50's predictions after / before.
"""

from __future__ import annotations

from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.cluster.topology import load_cluster
from placer.graphs.catalog import resolve_graph
from placer.serve.http import create_app

BYSTANDERS = ("vgg16", "bert_base", "gpt2_small")


def run(factor: float, jobs: int) -> None:
    with TestClient(create_app(load_cluster("dgx8x8"), make_heuristic("fixed:16"))) as client:

        def place(name: str) -> dict:
            job = client.post("/v1/placements", json={"graph": resolve_graph(name).to_dict(), "beta": 1.0}).json()
            return job

        def predicted(name: str) -> float:
            job = place(name)
            client.delete(f"/v1/jobs/{job['job_id']}")
            return job["predicted_iteration_s"]

        before = {name: predicted(name) for name in BYSTANDERS}
        placed = [place("resnet50") for _ in range(jobs)]
        for job in placed:
            for _ in range(3):
                client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": factor * job["predicted_iteration_s"]})
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        for job in placed:
            client.delete(f"/v1/jobs/{job['job_id']}")
        moved = {name: round(predicted(name) / before[name], 4) for name in BYSTANDERS}
        own = predicted("resnet50") / placed[0]["predicted_iteration_s"]
        print(f"{factor:g}x from {jobs} job(s): kept {state['measurements']}, suspects {len(state['suspects'])}, shared: {state['shared']}")
        print(f"  fitted {state['fitted']}; bystanders after / before {moved}; resnet50 after / before {own:.2f}")


if __name__ == "__main__":
    run(30, 4)
    run(1000, 1)
