"""Tenants are kept apart on a real loopback server: idempotency keys and graph keys are scoped per tenant (issue 82,
items 1 and 2)."""

from __future__ import annotations

import contextlib
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
from tests.placer.toys import chain, toy_cluster

TOKENS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob")}
CLUSTER = toy_cluster(1, 4)


@contextlib.contextmanager
def _serve(**settings) -> Iterator[tuple[object, dict[str, httpx.Client]]]:
    """A loopback server of tenants alice and bob (or ``settings``); (its app, one client per tenant)."""
    tenants = tuple(Tenant(name=name, token=token) for name, token in TOKENS.items())
    settings = {"tenants": tenants, "report_burst": 1000, "report_rate_per_s": 1000, **settings}
    app = create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**settings))
    with running(loopback(app)) as port, contextlib.ExitStack() as stack:
        clients = {
            name: stack.enter_context(
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60, headers={"Authorization": f"Bearer {token}"})
            )
            for name, token in TOKENS.items()
        }
        yield app, clients


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
