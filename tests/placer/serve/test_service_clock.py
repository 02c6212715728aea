"""Leases run on the monotonic clock, on a real loopback server whose clocks are injected (issue 82, item 5): a step of
the wall clock neither frees a lease early nor holds one late; a lease read back after a restart is never longer than
it was granted."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx

from placer.baselines.registry import make_heuristic
from placer.serve.clock import Clock
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from tests.placer.live_server import loopback, running
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(1, 4)


class SteppingClock:
    """A monotonic clock and a wall clock the test moves: ``advance`` moves both, ``step`` the wall clock alone."""

    def __init__(self) -> None:
        self.mono, self.wall = 5000.0, 1_800_000_000.0

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds

    def step(self, seconds: float) -> None:
        self.wall += seconds

    def clock(self) -> Clock:
        return Clock(monotonic=lambda: self.mono, wall=lambda: self.wall)


@contextlib.contextmanager
def _served(clock: SteppingClock, **settings) -> Iterator[httpx.Client]:
    app = create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**settings), clock.clock())
    with running(loopback(app)) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        yield client


def _lease(client: httpx.Client, lease_s: float) -> str:
    job = client.post("/v1/placements", json={"graph": chain().to_dict(), "beta": 1.0, "lease_s": lease_s}).json()
    assert job["accepted"]
    return job["job_id"]


def _held(client: httpx.Client) -> list[str]:
    return [j["job_id"] for j in client.get("/v1/cluster").json()["jobs"]]


def test_the_wall_clock_stepped_forward_frees_no_lease_early():
    clock = SteppingClock()
    with _served(clock) as client:
        job = _lease(client, 600.0)
        clock.step(700.0)
        assert _held(client) == [job]  # 0 s of its 600 s have passed
        clock.advance(599.0)
        assert _held(client) == [job]
        clock.advance(2.0)
        assert _held(client) == []


def test_the_wall_clock_stepped_back_holds_no_lease_late():
    clock = SteppingClock()
    with _served(clock) as client:
        job = _lease(client, 2.0)
        clock.step(-3600.0)
        clock.advance(1.0)
        assert _held(client) == [job]
        clock.advance(1.5)
        assert _held(client) == []
        assert client.delete(f"/v1/jobs/{job}").status_code == 410


def test_a_lease_read_back_after_the_wall_clock_stepped_back_is_no_longer_than_granted(tmp_path):
    clock = SteppingClock()
    with _served(clock, state_path=tmp_path / "s.sqlite3") as client:
        job = _lease(client, 10.0)
    clock.step(-3600.0)  # while the server was down
    with _served(clock, state_path=tmp_path / "s.sqlite3") as client:
        clock.advance(9.0)
        assert _held(client) == [job]
        clock.advance(1.5)
        assert _held(client) == []
