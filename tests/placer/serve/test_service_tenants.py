"""Tenants on a real loopback server: each job is its placer's, and no tenant steers another's decisions (issue 54, item 3)."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from placer.baselines.registry import make_heuristic
from placer.cost.model import CostModel
from placer.graphs.catalog import resolve_graph
from placer.graphs.job_graph import job_graph_from_dict
from placer.serve.errors import TenantsFileError
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from placer.serve.tenants import load_tenants
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, op, toy_cluster, toy_graph

TOKENS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob", "carol", "mallory", "ops")}


def _tenants_file(path, trusted: tuple[str, ...] = ()) -> object:
    """A tenants file of alice, bob, carol and mallory (plain; ``trusted`` for calibration) and ops (admin), mode 0600."""
    lines = []
    for name, token in TOKENS.items():
        lines += [f"[tenants.{name}]", f'token = "{token}"']
        if name == "ops":
            lines += ["admin = true", 'calibration = "trusted"']
        elif name in trusted:
            lines.append('calibration = "trusted"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


@contextlib.contextmanager
def _serve(tmp_path, cluster, policy: str, trusted: tuple[str, ...] = ()) -> Iterator[tuple[object, dict[str, httpx.Client]]]:
    """A loopback server of the tenants file; (its app, one client per tenant)."""
    tenants = load_tenants(_tenants_file(tmp_path / "tenants.toml", trusted)).tenants
    app = create_app(cluster, make_heuristic(policy), ServiceSettings(tenants=tenants, report_burst=1000, report_rate_per_s=1000))
    with running(loopback(app)) as port, contextlib.ExitStack() as stack:
        clients = {
            name: stack.enter_context(
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60, headers={"Authorization": f"Bearer {token}"})
            )
            for name, token in TOKENS.items()
        }
        yield app, clients


def _place(client: httpx.Client, graph: dict, beta: float = 1.0, **headers: str) -> dict:
    response = client.post("/v1/placements", json={"graph": graph, "beta": beta}, headers=headers)
    assert response.status_code == 200 and response.json()["accepted"], response.text
    return response.json()


# -- the tenants file -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        ('[tenants.a]\ntoken = "{good}"\n', 0o644, "open to group or others (mode 644): chmod 600 it"),
        ('[tenants.a]\ntoken = "1234"\n', 0o600, "the token of tenant 'a' holds at most 16 bits; at least 128"),
        ('[tenants.a]\ntoken = "{weak}"\n', 0o600, "distinct characters: it is not random"),
        ('[tenants.a]\ntoken = "{good}"\n[tenants.b]\ntoken = "{good}"\n', 0o600, "tenants 'a' and 'b' share a token"),
        ('[tenants."a b"]\ntoken = "{good}"\n', 0o600, "tenant name 'a b' must be 1 to 64 letters"),
        ('[tenants.a]\ntoken = "{good}"\nrole = "root"\n', 0o600, "tenants.a.role: Extra inputs are not permitted"),
        ('[tenants.a]\ntoken = "{good}"\ncalibration = "yes"\n', 0o600, "tenants.a.calibration: Input should be 'untrusted' or 'trusted'"),
        ("tenants = [", 0o600, "is not TOML"),
        ("[other]\n", 0o600, "tenants: Field required"),
    ],
)
def test_a_tenants_file_that_cannot_guard_the_service_is_refused_in_one_line(tmp_path, text, mode, message):
    path = tmp_path / "tenants.toml"
    path.write_text(text.format(good=secrets.token_urlsafe(32), weak="ab" * 40))
    path.chmod(mode)
    with pytest.raises(TenantsFileError, match="tenants file") as caught:
        load_tenants(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_placer_serve_refuses_a_world_readable_tenants_file_and_a_second_token(tmp_path):
    path = _tenants_file(tmp_path / "tenants.toml")
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"}
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--memory-only", "--port", "0", "--tenants", str(path)]
    path.chmod(0o644)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2 and "chmod 600 it" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    path.chmod(0o600)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env | {"PLACER_TOKEN": secrets.token_urlsafe(32)})
    assert result.returncode == 2 and "not both" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- ownership ---------------------------------------------------------------------------


def test_only_the_owner_or_an_admin_may_release_renew_or_report_and_others_get_404(tmp_path):
    with _serve(tmp_path, toy_cluster(1, 4), "fixed:1") as (_, c):
        job = c["alice"].post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0, "lease_s": 60.0}).json()
        path = f"/v1/jobs/{job['job_id']}"
        foreign = [
            c["bob"].delete(path),
            c["bob"].post(f"{path}/lease", json={"lease_s": 1.0}),
            c["bob"].post(f"{path}/step-times", json={"step_time_s": 7.0}),
        ]
        never = c["bob"].delete("/v1/jobs/0123456789abcdef0123456789abcdef")
        assert [r.status_code for r in foreign] == [404, 404, 404]
        assert {r.json()["detail"].replace(job["job_id"], "ID") for r in foreign} == {"no running job 'ID'"}  # as a job that never ran
        assert never.status_code == 404
        assert c["alice"].get("/v1/calibration").json()["measurements"] == 0
        assert c["alice"].post(f"{path}/lease", json={"lease_s": 30.0}).json()["lease_s"] == 30.0  # untouched by bob: still held
        assert c["alice"].post(f"{path}/step-times", json={"step_time_s": 7.0}).status_code == 202
        assert c["ops"].post(f"{path}/lease", json={}).status_code == 200  # an admin may act on any job
        assert c["alice"].delete(path).json()["owner"] == "alice"
        assert c["alice"].delete(path).status_code == 404
        assert c["alice"].get("/v1/cluster", headers={"Authorization": "Bearer " + "x" * 43}).status_code == 401


def test_an_idempotency_key_replays_only_its_own_tenants_answer(tmp_path):
    with _serve(tmp_path, toy_cluster(1, 4), "fixed:1") as (_, c):
        first = _place(c["alice"], chain().to_dict(), **{"Idempotency-Key": "job-1"})
        assert _place(c["alice"], chain().to_dict(), **{"Idempotency-Key": "job-1"}) == first
        theirs = _place(c["bob"], chain().to_dict(), **{"Idempotency-Key": "job-1"})
        assert theirs["job_id"] != first["job_id"]  # bob's own placement, not alice's answer
        other = c["bob"].post("/v1/placements", json={"graph": chain().to_dict(), "beta": 0.5}, headers={"Idempotency-Key": "job-1"})
        assert other.status_code == 422 and "alice" not in other.text  # conflicts with bob's own first use only
        assert c["alice"].get("/v1/cluster").json()["devices_free"] == 2


def test_a_plain_tenant_sees_only_its_own_job_ids_and_an_admin_sees_all(tmp_path):
    with _serve(tmp_path, toy_cluster(1, 4), "fixed:1") as (_, c):
        mine, theirs = _place(c["alice"], chain().to_dict()), _place(c["bob"], chain().to_dict())
        seen = c["alice"].get("/v1/cluster").json()
        assert [j["job_id"] for j in seen["jobs"]] == [mine["job_id"]] and seen["devices_free"] == 2
        held = {d["device"]: (d["busy"], d["job_id"]) for d in seen["devices"]}
        assert held[theirs["devices"][0]] == (True, None) and held[mine["devices"][0]] == (True, mine["job_id"])
        assert theirs["job_id"] not in c["alice"].get("/v1/cluster").text
        everything = c["ops"].get("/v1/cluster").json()
        assert {(j["job_id"], j["owner"]) for j in everything["jobs"]} == {(mine["job_id"], "alice"), (theirs["job_id"], "bob")}
        assert {d["job_id"] for d in everything["devices"] if d["busy"]} == {mine["job_id"], theirs["job_id"]}


# -- poisoning ---------------------------------------------------------------------------


def _matmul_graph(name: str, compute_s: float, param_bytes: float = 2e8) -> dict:
    """Two matmul-class ops (a job's fitted compute rate scales them), heavy gradients (the network matters)."""
    a, b = op(compute_s, param_bytes=param_bytes), op(2 * compute_s, param_bytes=param_bytes)
    data = toy_graph({"a": a, "b": b}, {("a", "b"): 1e3}, name=name).to_dict()
    for node in data["graph"]["nodes"]:
        node["name"] = "aten.mm"
    return data


def test_a_graph_named_like_another_moves_only_its_own_predictions(tmp_path):
    """Story 1: 2 jobs of a 2-op graph named resnet50 and 6 reports 9x slower; alice's real resnet50 is predicted as before."""
    real = resolve_graph("resnet50").to_dict()
    with _serve(tmp_path, toy_cluster(14, 2), "lean") as (app, c):
        before = _place(c["alice"], real, beta=0.5)
        c["alice"].delete(f"/v1/jobs/{before['job_id']}")
        fake = [_place(c["mallory"], _matmul_graph("resnet50", 2.0)) for _ in range(2)]
        for job in fake:
            for factor in (9.0, 9.2, 8.8):
                report = {"step_time_s": factor * job["predicted_iteration_s"]}
                response = c["mallory"].post(f"/v1/jobs/{job['job_id']}/step-times", json=report)
                assert response.status_code == 202, response.text
        app.state.occupancy.refitter.wait()
        state = c["ops"].get("/v1/calibration").json()  # an admin sees every graph's fit (alice: her own only)
        assert state["measurements"] == 6 and set(state["fitted"]) >= {f"jobs.{fake[0]['graph_key']}.compute_scale"}
        assert not any(before["graph_key"] in k for k in state["fitted"]) and state["shared"].startswith("held")
        for job in fake:
            c["mallory"].delete(f"/v1/jobs/{job['job_id']}")
        after = _place(c["alice"], real, beta=0.5)
        assert after["predicted_iteration_s"] == pytest.approx(before["predicted_iteration_s"], rel=1e-9)
        assert after["devices"] == before["devices"]
        honest = c["alice"].post(f"/v1/jobs/{after['job_id']}/step-times", json={"step_time_s": after["predicted_iteration_s"]})
        assert honest.status_code == 202, honest.text


SLOW_NETWORK = toy_cluster(14, 2, inter=(4e9 / 8, 0.0))  # the network 8x slower than the cluster file says
JOBS = [("g1", 2.0, 1.0), ("g2", 3.0, 0.5), ("g3", 1.0, 0.3), ("g1", 2.0, 0.2), ("g2", 3.0, 0.9), ("g3", 1.0, 0.6), ("g4", 1.5, 0.4)]


@pytest.mark.parametrize(
    ("reporters", "trusted", "moves"),
    [
        (("mallory",), (), False),  # one client's 7 jobs, self-consistent: the shared constants hold
        (("mallory",), ("mallory",), True),  # the same from a client trusted for calibration: they move
        (("alice", "bob", "carol"), (), True),  # three distinct tenants agree: they move
    ],
)
def test_the_shared_constants_move_only_on_several_tenants_or_a_trusted_one(tmp_path, reporters, trusted, moves):
    """Story 2: reports of 7 jobs of 4 graphs, self-consistent with a network 8x slower than the cluster file's."""
    cluster = toy_cluster(14, 2)
    truth = CostModel(SLOW_NETWORK)
    with _serve(tmp_path, cluster, "lean", trusted) as (app, c):
        bystander = _place(c["ops"], _matmul_graph("bystander", 2.5), beta=0.3)
        c["ops"].delete(f"/v1/jobs/{bystander['job_id']}")
        for i, (name, compute_s, beta) in enumerate(JOBS):
            reporter = c[reporters[i % len(reporters)]]
            job = _place(reporter, _matmul_graph(name, compute_s), beta=beta)
            measured = truth.predict(job_graph_from_dict(_matmul_graph(name, compute_s)), [cluster.device_index[d] for d in job["devices"]])
            for factor in (1.0, 1.03, 0.97):
                response = reporter.post(f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": factor * measured.iteration_s})
                assert response.status_code == 202, response.text
        app.state.occupancy.refitter.wait()
        state = c["ops"].get("/v1/calibration").json()
        assert state["measurements"] == 21 and state["last_error"] is None
        again = _place(c["ops"], _matmul_graph("bystander", 2.5), beta=0.3)
        if moves:
            assert state["shared"].startswith("moved") and state["fitted"]["links.inter_server.bandwidth_Bps"] < 4e9 / 4, state["shared"]
        else:
            assert state["shared"].startswith("held") and not any(not k.startswith("jobs.") for k in state["fitted"]), state
            assert again["predicted_iteration_s"] == bystander["predicted_iteration_s"] and again["degree"] == bystander["degree"]


def test_jobs_of_a_state_file_from_before_tenants_are_the_admins_and_the_single_tenants(tmp_path):
    from placer.serve.errors import UnknownJobError
    from placer.serve.occupancy import Occupancy
    from placer.serve.reservations import Reservation, ReservationStore
    from placer.serve.tenants import DEFAULT_TENANT

    cluster, path = toy_cluster(1, 4), tmp_path / "s.sqlite3"
    store = ReservationStore(path, cluster=cluster.name, devices=[cluster.device_name(d) for d in range(4)])
    store.add(Reservation("old", "g", ("s0-g0",), 1.0, 2.0))  # owner null: written before tenants
    store.close()
    tenants = load_tenants(_tenants_file(tmp_path / "tenants.toml")).tenants
    state = Occupancy(cluster, make_heuristic("fixed:1"), ServiceSettings(state_path=path, tenants=tenants))
    try:
        alice, ops = (next(t for t in tenants if t.name == name) for name in ("alice", "ops"))
        with pytest.raises(UnknownJobError):
            state.release("old", alice)
        assert state.snapshot(alice).jobs == [] and state.snapshot(ops).jobs[0].owner is None
        assert state.release("old", ops).job_id == "old"
    finally:
        state.close()
    state = Occupancy(cluster, make_heuristic("fixed:1"), ServiceSettings(state_path=path))  # one tenant again: it acts on all
    try:
        assert DEFAULT_TENANT.admin and DEFAULT_TENANT.trusted and state.snapshot().devices_free == 4
    finally:
        state.close()
