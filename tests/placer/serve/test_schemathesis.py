"""Schemathesis against a real loopback server's ``/openapi.json`` (issue 82, item 7): every check passes.

``--checks all``: no 5xx, every answer's status, content type, headers and body as the schema declares, schema-violating
requests refused (ST201), schema-valid ones not refused for their form (ST202), unrouted methods 405, over the
coverage, fuzzing and stateful phases. Two things a schema cannot state are told to schemathesis:

- a schema-valid request may get a one-line 422 or a 410 for a rule of the server's state or of the domain (a graph
  with no ops, an unknown device, a lease renewed that has none, a lease that ran out), as it may get 404 or 409: the
  configuration below; a field-by-field 422 (the service's validation disagreeing with its schema, as ``1044.0`` for
  an integer did) still fails, by the hooks' check (:mod:`tests.placer.serve.schemathesis_hooks`);
- an Idempotency-Key binds to its first request: the hooks give each generated request its own.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from tests.conftest import REPO
from tests.placer.live_server import loopback, running
from tests.placer.toys import toy_cluster

TOKEN = secrets.token_urlsafe(32)
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "410", "422", "429", "5xx"]
"""
MAX_EXAMPLES = 15  # per operation and phase: about 20 s on 2 busy cores (the default, 100: about 35 s)


def test_schemathesis_finds_no_failure_against_the_served_schema(tmp_path):
    (tmp_path / "schemathesis.toml").write_text(CONFIG)
    app = create_app(toy_cluster(1, 4), make_heuristic("fixed:1"), ServiceSettings(token=TOKEN))
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(tmp_path / "schemathesis.toml"), "run"),
        *("--checks", "all", "--seed", "82", "--max-examples", str(MAX_EXAMPLES), "--workers", "1"),
        *("--generation-database", "none", "--no-color", "-H", f"Authorization: Bearer {TOKEN}"),
    ]
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.placer.serve.schemathesis_hooks", "PYTHONPATH": path}
    with running(loopback(app)) as port:
        started = time.monotonic()
        run = subprocess.run(
            [*command, f"http://127.0.0.1:{port}/openapi.json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        took = time.monotonic() - started
    failures = run.stdout.find("= FAILURES =")
    assert run.returncode == 0, run.stdout[failures if failures >= 0 else -4000 :][:12000] + run.stderr[-2000:]
    assert " passed" in run.stdout.split("= SUMMARY =")[-1], run.stdout[-4000:]
    assert took < 120, took  # (about 20 s)
