"""Tenants are kept apart on a real loopback server: idempotency keys and graph keys are scoped per tenant (issue 82,
items 1 and 2)."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator

import httpx
import pytest

from placer.baselines.registry import make_heuristic
from placer.serve.errors import TenantsFileError
from placer.serve.http import create_app
from placer.serve.reservations import ReservationStore
from placer.serve.settings import ServiceSettings
from placer.serve.tenants import DEFAULT_TENANT, Tenant, load_tenants
from tests.placer.live_server import loopback, running
from tests.placer.serve.test_service_tenants import _matmul_graph
from tests.placer.toys import chain, toy_cluster

TOKENS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob")}
CLUSTER = toy_cluster(1, 4)


_TENANTS = tuple(Tenant(name=name, token=token) for name, token in TOKENS.items())


@contextlib.contextmanager
def _serve(**settings) -> Iterator[tuple[object, dict[str, httpx.Client]]]:
    """A loopback server of tenants alice and bob (or ``settings``); (its app, one client per tenant)."""
    settings = {"tenants": _TENANTS, "report_burst": 1000, "report_rate_per_s": 1000, **settings}
    app = create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**settings))
    with running(loopback(app)) as port, _clients(port) as clients:
        yield app, clients


@contextlib.contextmanager
def _clients(port: int) -> Iterator[dict[str, httpx.Client]]:
    """One client per tenant of the loopback server on ``port``."""
    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60, headers={"Authorization": f"Bearer {token}"})
            )
            for name, token in TOKENS.items()
        }


def _place(client: httpx.Client, body: dict, **headers: str) -> httpx.Response:
    return client.post("/v1/placements", json={"beta": 1.0, **body}, headers=headers)


# -- item 1: idempotency keys -------------------------------------------------------------


def test_a_tenants_file_naming_the_reserved_tenant_default_is_refused_in_one_line(tmp_path):
    path = tmp_path / "tenants.toml"
    path.write_text(f'[tenants.default]\ntoken = "{secrets.token_urlsafe(32)}"\n[tenants.alice]\ntoken = "{TOKENS["alice"]}"\n')
    path.chmod(0o600)
    with pytest.raises(TenantsFileError) as caught:
        load_tenants(path)
    assert "tenant name 'default' is reserved" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="'default' is reserved"):
        ServiceSettings(tenants=(DEFAULT_TENANT.model_copy(update={"token": TOKENS["bob"]}),))


def test_no_tenants_scoped_key_equals_anothers():
    alice, bob = Tenant(name="alice"), Tenant(name="alice.b")
    keys = {DEFAULT_TENANT.scoped("alice/k1"), alice.scoped("k1"), DEFAULT_TENANT.scoped("alice k1"), bob.scoped("k1")}
    assert len(keys) == 4 and alice.scoped("b k1") != bob.scoped("k1")


def test_a_key_shaped_like_another_tenants_scoped_key_never_replays_its_answer():
    with _serve() as (_, c):
        first = _place(c["alice"], {"graph": chain().to_dict()}, **{"Idempotency-Key": "k1"}).json()
        assert first["accepted"]
        for key in ("alice/k1", "alice%20k1", "alice k1".replace(" ", "_")):
            theirs = _place(c["bob"], {"graph": chain().to_dict()}, **{"Idempotency-Key": key})
            assert theirs.status_code == 200 and theirs.json()["job_id"] != first["job_id"], key
        again = _place(c["alice"], {"graph": chain().to_dict()}, **{"Idempotency-Key": "k1"}).json()
        assert again == first


def test_the_single_tenants_answers_stored_before_keys_were_scoped_are_replayed(tmp_path):
    path = tmp_path / "state.sqlite3"
    with _serve(tenants=None, state_path=path) as (_, c):  # no tenants, no token: every request is the single tenant's
        first = _place(c["alice"], {"graph": chain().to_dict()}, **{"Idempotency-Key": "k-1"}).json()
    store = ReservationStore(path, cluster=CLUSTER.name, devices=[CLUSTER.device_name(d) for d in range(4)])
    store._db.execute("UPDATE idempotency SET key = 'k-1' WHERE key = 'default k-1'")  # as a file written before scoping
    store.close()
    with _serve(tenants=None, state_path=path) as (_, c):
        assert _place(c["alice"], {"graph": chain().to_dict()}, **{"Idempotency-Key": "k-1"}).json() == first
        assert len(c["alice"].get("/v1/cluster").json()["jobs"]) == 1  # nothing reserved again


# -- item 2: graph keys, fits and calibration views ---------------------------------------


def test_another_tenants_graph_key_answers_exactly_as_an_unknown_key():
    with _serve() as (_, c):
        mine = _place(c["alice"], {"graph": chain().to_dict()}).json()
        theirs = _place(c["bob"], {"graph_key": mine["graph_key"]})
        unknown = _place(c["bob"], {"graph_key": "0123456789abcdef"})
        assert (theirs.status_code, unknown.status_code) == (404, 404)
        assert theirs.json()["detail"].replace(mine["graph_key"], "K") == unknown.json()["detail"].replace("0123456789abcdef", "K")
        assert _place(c["alice"], {"graph_key": mine["graph_key"]}).status_code == 200  # the owner's key still works
        bobs = _place(c["bob"], {"graph": chain().to_dict()}).json()  # the same graph sent by bob: a key of his own
        assert bobs["graph_key"] != mine["graph_key"]


def test_a_tenants_reports_move_only_its_own_graphs_and_others_never_see_its_keys():
    cluster, graph = toy_cluster(14, 2), _matmul_graph("shared", 2.0)
    app = create_app(cluster, make_heuristic("lean"), ServiceSettings(tenants=_TENANTS, report_burst=1000, report_rate_per_s=1000))
    with running(loopback(app)) as port, _clients(port) as c:
        before = _place(c["alice"], {"graph": graph}).json()
        c["alice"].delete(f"/v1/jobs/{before['job_id']}")
        for _ in range(2):
            job = _place(c["bob"], {"graph": graph}).json()
            for factor in (9.0, 9.2, 8.8):
                response = c["bob"].post(
                    f"/v1/jobs/{job['job_id']}/step-times", json={"step_time_s": factor * job["predicted_iteration_s"]}
                )
                assert response.status_code == 202, response.text
            c["bob"].delete(f"/v1/jobs/{job['job_id']}")
        app.state.occupancy.refitter.wait()
        bobs = c["bob"].get("/v1/calibration").json()
        assert any(job["graph_key"] in k for k in bobs["fitted"]), bobs  # bob's own graph was fitted
        alices = c["alice"].get("/v1/calibration").json()
        assert not any(k.startswith("jobs.") for k in alices["fitted"]) and job["graph_key"] not in str(alices)
        after = _place(c["alice"], {"graph": graph}).json()
        assert after["predicted_iteration_s"] == pytest.approx(before["predicted_iteration_s"], rel=1e-9)


def test_a_tenants_kept_reports_are_its_own_after_a_restart(tmp_path):
    from placer.serve.occupancy import Occupancy
    from placer.serve.schemas import StepTimeReport

    settings = ServiceSettings(tenants=_TENANTS, state_path=tmp_path / "state.sqlite3")
    alice = _TENANTS[0]
    state = Occupancy(CLUSTER, make_heuristic("fixed:1"), settings)
    try:
        decision = state.place(state.parse(json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()), tenant=alice)
        state.report(decision.job_id, StepTimeReport(step_time_s=decision.predicted_iteration_s), alice)
    finally:
        state.close()
    state = Occupancy(CLUSTER, make_heuristic("fixed:1"), settings)
    try:
        assert [r.graph.key for r in state.refitter.rows] == [decision.graph_key]  # alice's key, not the content's
        assert [r.source for r in state.refitter.rows] == ["alice"]
    finally:
        state.close()


# -- issue 81, item 5: a shipped graph by name ---------------------------------------------


def test_a_shipped_graph_may_be_named_and_an_unknown_name_is_one_422_line():
    with _serve(tenants=None) as (_, c):
        named = _place(c["alice"], {"graph": "resnet50"})
        assert named.status_code == 200, named.text
        job = next(j for j in c["alice"].get("/v1/cluster").json()["jobs"] if j["job_id"] == named.json()["job_id"])
        assert job["graph"] == "resnet50"
        unknown = _place(c["alice"], {"graph": "resnet5000"})
        assert unknown.status_code == 422 and "unknown shipped graph 'resnet5000'" in unknown.json()["detail"]
        path = _place(c["alice"], {"graph": "/etc/passwd"})  # a name, never a path read on the server
        assert path.status_code == 422 and "unknown shipped graph '/etc/passwd'" in path.json()["detail"]
