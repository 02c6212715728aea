"""The service's online refit cannot be steered by one client (issue 30)."""

from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from tests.placer.toys import op, toy_cluster, toy_graph

CLUSTER = toy_cluster(14, 2)  # "fixed:4" spans two servers per job


def _graph(name: str, compute_s: float = 2.0, param_bytes: float = 1e6) -> dict:
    """Two matmul-class ops (a job's fitted compute rate scales them); small gradients (by default): GPU time dominates."""
    a, b = op(compute_s, param_bytes=param_bytes), op(2 * compute_s, param_bytes=param_bytes)
    graph = toy_graph({"a": a, "b": b}, {("a", "b"): 1e3}, name=name)
    data = graph.to_dict()
    for node in data["graph"]["nodes"]:
        node["name"] = "aten.mm"
    return data


def _place(client, name: str, **kw) -> dict:
    response = client.post("/v1/placements", json={"graph": _graph(name, **kw), "beta": 1.0})
    assert response.status_code == 200, response.text
    return response.json()


def test_one_graphs_slow_reports_move_its_own_predictions_only_and_a_1000x_report_is_held():
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:4"))) as client:
        bystanders = {name: _place(client, name, compute_s=s) for name, s in (("other", 1.0), ("third", 3.0))}
        for job in bystanders.values():
            client.delete(f"/v1/jobs/{job['job_id']}")
        jobs = [_place(client, "noisy") for _ in range(5)]
        assert all(len({d.split("-")[0] for d in job["devices"]}) == 2 for job in jobs)  # each spans two servers
        for job in jobs:
            for _ in range(3):
                response = client.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": 30 * job["predicted_iteration_s"]})
                assert response.status_code == 202
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        assert state["measurements"] == 15 and state["suspects"] == [] and state["shared"].startswith("held")
        assert set(state["fitted"]) == {"jobs.noisy.compute_scale"}  # no shared constant moved
        for job in jobs:
            client.delete(f"/v1/jobs/{job['job_id']}")
        for name, s in (("other", 1.0), ("third", 3.0)):
            again = _place(client, name, compute_s=s)
            assert abs(again["predicted_iteration_s"] / bystanders[name]["predicted_iteration_s"] - 1) <= 0.2
            client.delete(f"/v1/jobs/{again['job_id']}")
        noisy = _place(client, "noisy")
        assert abs(noisy["predicted_iteration_s"] / (30 * jobs[0]["predicted_iteration_s"]) - 1) <= 0.2  # follows its reports
        liar = _place(client, "liar")
        response = client.post(f"/v1/jobs/{liar['job_id']}/step-times", json={"step_time_s": 1000 * liar["predicted_iteration_s"]})
        assert response.status_code == 202
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        assert state["measurements"] == 15 and [s["graph"] for s in state["suspects"]] == ["liar"]
        assert state["suspects"][0]["ratio"] > 900 and "100x" in state["suspects"][0]["why"]


def test_a_10x_report_waits_for_another_job_of_its_graph_to_agree():
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:4"))) as client:
        first, second = _place(client, "slow"), _place(client, "slow")
        client.post(f"/v1/jobs/{first['job_id']}/step-times", json={"step_time_s": 20 * first["predicted_iteration_s"]})
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        assert state["measurements"] == 0 and len(state["suspects"]) == 1 and "no other job" in state["suspects"][0]["why"]
        client.post(f"/v1/jobs/{second['job_id']}/step-times", json={"step_time_s": 25 * second["predicted_iteration_s"]})
        client.app.state.occupancy.refitter.wait()
        state = client.get("/v1/calibration").json()
        assert state["measurements"] == 2 and state["suspects"] == []
        assert state["fitted"]["jobs.slow.compute_scale"] < 0.1


def test_shared_constants_move_only_on_several_graphs_and_a_better_cross_validated_error():
    """Three graphs on four placement shapes, all slower across servers by the same link: the inter-server bandwidth moves."""
    from placer.cost.model import CostModel
    from placer.graphs.job_graph import job_graph_from_dict
    from placer.serve.refit import Refitter, graph_document
    from placer.serve.reservations import ReservationStore

    truth = CostModel(toy_cluster(14, 2, inter=(4e9 / 20, 0.0)))
    store = ReservationStore(None, cluster=CLUSTER.name, devices=[CLUSTER.device_name(d) for d in range(CLUSTER.num_devices)])
    used: list = []

    def use(cluster, priced):
        used.append(cluster)
        model = CostModel(cluster)
        assert model.adopt(priced)
        return model

    refitter = Refitter(CLUSTER, store, use)
    try:
        for name in ("g1", "g2", "g3"):
            graph = job_graph_from_dict(_graph(name, param_bytes=2e8))
            for devices in (("s0-g0",), ("s1-g0", "s1-g1"), ("s2-g0", "s3-g0"), ("s4-g0", "s4-g1", "s5-g0", "s5-g1")):
                measured = truth.predict(graph, [CLUSTER.device_index[d] for d in devices]).iteration_s
                refitter.keep(refitter.check(graph, devices, measured), 0.0, graph_document(graph))
        refitter.wait()
        state = refitter.state
        assert state.measurements == 12 and (state.shared.startswith("moved") or "values in use" in state.shared), state.shared
        assert state.fitted["links.inter_server.bandwidth_Bps"] < 4e9 / 5 and state.median_error < 0.02 and state.cv_error < 0.05
        assert used and used[-1].spec.links.inter_server.bandwidth_Bps < 4e9 / 10
    finally:
        refitter.close()


def test_a_client_reporting_too_often_is_told_to_wait():
    from placer.serve.ratelimit import RateLimiter
    from placer.serve.settings import ServiceSettings

    now = [0.0]
    limiter = RateLimiter(2.0, 3, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]  # a burst of 3, then one every 0.5 s
    assert limiter.take("b") == 0.0  # each client its own bucket
    now[0] = 0.5
    assert limiter.take("a") == 0.0 and limiter.take("a") == 0.5

    settings = ServiceSettings(report_rate_per_s=0.5, report_burst=2)
    with TestClient(create_app(CLUSTER, make_heuristic("fixed:4"), settings)) as client:
        job = client.post("/v1/placements", json={"graph": _graph("flood"), "beta": 1.0}).json()
        url, report = f"/v1/jobs/{job['job_id']}/step-times", {"step_time_s": job["predicted_iteration_s"]}
        answers = [client.post(url, json=report) for _ in range(3)]
        assert [a.status_code for a in answers] == [202, 202, 429]
        assert answers[2].headers["retry-after"] == "2" and "at most 0.5/s" in answers[2].json()["detail"]
        assert client.get("/v1/calibration").json()["measurements"] == 2  # the refused report was not kept
