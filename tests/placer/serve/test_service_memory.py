"""Memory bounded by bytes (issue 54, item 4): every graph the service keeps counts against one budget, edges included.

The soak runs a real ``placer serve`` on loopback and reads its resident memory from /proc.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import tracemalloc
from pathlib import Path

import httpx
import pytest

from benchmarks.bench_service import synthetic_graph
from placer.baselines.registry import make_heuristic
from placer.graphs.job_graph import job_graph_from_json
from placer.serve.errors import GraphMemoryFullError, GraphTooLargeError
from placer.serve.graphs import BYTES_PER_GRAPH_ELEMENT, MIB, GraphPool, graph_bytes
from placer.serve.occupancy import Occupancy
from placer.serve.settings import ServiceSettings
from tests.placer.serve.subprocess_server import free_port, start_serve, write_toy_cluster
from tests.placer.toys import toy_cluster


def test_the_bytes_per_element_estimate_covers_a_graph_held_in_memory():
    text = json.dumps(synthetic_graph(4000))
    tracemalloc.start()
    graph = job_graph_from_json(text, source="synthetic")
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_element = held / (graph.num_ops + graph.num_edges)
    assert BYTES_PER_GRAPH_ELEMENT / 2 < per_element <= 1.05 * BYTES_PER_GRAPH_ELEMENT, per_element  # 491 on CPython 3.11
    assert graph_bytes(graph) == (graph.num_ops + graph.num_edges) * BYTES_PER_GRAPH_ELEMENT


def test_edges_count_against_the_graph_size_limit_before_anything_is_parsed():
    state = Occupancy(toy_cluster(2, 4), make_heuristic("lean"), ServiceSettings(max_graph_ops=1000, max_graph_edges=100))
    try:
        body = json.dumps({"graph": synthetic_graph(200), "beta": 1.0}).encode()  # 200 ops, 299 edges
        with pytest.raises(GraphTooLargeError, match="more than 100 edges.*--max-graph-edges"):
            state.parse(body)
        with pytest.raises(GraphTooLargeError, match="more than 100 edges"):  # past the scan (keys hidden), validation stops it
            state.parse(body.replace(b'"target"', b'"target" '))
        assert state.parse(json.dumps({"graph": synthetic_graph(60), "beta": 1.0}).encode()).graph is not None
    finally:
        state.close()


def _graph(ops: int, name: str):
    return job_graph_from_json(json.dumps(synthetic_graph(ops, name)), source=name)


def test_the_pool_keeps_one_copy_per_content_and_refuses_to_hold_past_its_budget():
    a, a_again, b, c = _graph(200, "a"), _graph(200, "a"), _graph(200, "b"), _graph(200, "c")
    pool = GraphPool(max_bytes=2.5 * graph_bytes(a), max_cached=8)
    assert pool.admit(a, "job1") is a and pool.admit(a_again, "job2") is a  # one copy for two jobs
    pool.admit(b, "job3")
    assert pool.held_bytes == 2 * graph_bytes(a)
    with pytest.raises(GraphMemoryFullError, match="holds 0 MiB of graphs of running jobs") as refused:
        pool.admit(c, "job4")
    assert refused.value.retry_after_s is not None and c.key not in pool
    pool.let_go(b.key, "job3")  # b is now cached only: it makes room
    assert pool.admit(c, "job4") is c and b.key not in pool
    huge = GraphPool(max_bytes=graph_bytes(a) / 2, max_cached=8)
    with pytest.raises(GraphMemoryFullError, match="more than this server's graph memory") as alone:
        huge.admit(a, "job1")
    assert alone.value.retry_after_s is None


def test_a_placement_whose_graph_does_not_fit_is_refused_and_released_jobs_make_room():
    one = graph_bytes(_graph(400, "x"))
    settings = ServiceSettings(cache_bytes=2 * 2.5 * one, max_graph_ops=1000, max_graph_edges=1000)
    state = Occupancy(toy_cluster(2, 4), make_heuristic("fixed:1"), settings)
    try:
        placed = [
            state.place(state.parse(json.dumps({"graph": synthetic_graph(400, name), "beta": 1.0}).encode())) for name in ("x", "x", "y")
        ]
        assert all(d.accepted for d in placed) and len(state.job_graphs) == 3
        assert state.job_graphs[placed[0].job_id] is state.job_graphs[placed[1].job_id]  # one copy of x
        with pytest.raises(GraphMemoryFullError, match="retry when jobs are released"):
            state.place(state.parse(json.dumps({"graph": synthetic_graph(400, "z"), "beta": 1.0}).encode()))
        assert placed[2].job_id is not None
        state.release(placed[2].job_id)
        assert state.place(state.parse(json.dumps({"graph": synthetic_graph(400, "z"), "beta": 1.0}).encode())).accepted
    finally:
        state.close()


def _rss_mb(pid: int) -> float:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _stop(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(30)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the server's resident memory from Linux's /proc")
def test_memory_soak_held_and_reported_graphs_stay_within_the_budget_and_a_restart_is_fast(tmp_path):
    write_toy_cluster(tmp_path, 8, 8)
    ops, cache_mb, port = 6000, 64, free_port()  # a graph of 6,000 ops + 8,999 edges: about 7.2 MiB held
    size_mib = (ops + 1.5 * ops) * BYTES_PER_GRAPH_ELEMENT / MIB
    server = start_serve(tmp_path, port, "--cache-mb", str(cache_mb))
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:

            def place(name: str) -> httpx.Response:
                return c.post("/v1/placements", json={"graph": synthetic_graph(ops, name), "beta": 1.0})

            first = place("a").json()
            rss_start = _rss_mb(server.pid)
            held = [first, *(place("a").json() for _ in range(23))]  # 24 jobs of one graph, each sent whole
            assert all(d["accepted"] for d in held)
            held += [place(name).json() for name in ("b", "c", "d")]  # 4 distinct graphs: 29 MiB of 32 held
            refused = place("e")
            assert refused.status_code == 413 and "retry when jobs are released" in refused.json()["detail"]
            assert int(refused.headers["Retry-After"]) >= 1
            reporting = [held[0], held[-3], held[-2]]  # graphs a, b, c: the newest two fit the 16 MiB kept for reports
            for job in reporting:
                report = {"step_time_s": 1.2 * job["predicted_iteration_s"]}
                assert c.post(f"/v1/jobs/{job['job_id']}/step-times", json=report).status_code == 202
            for job in held:
                assert c.delete(f"/v1/jobs/{job['job_id']}").status_code == 200
            assert place("e").json()["accepted"]  # room came back
            rss_end = _rss_mb(server.pid)
            kept = c.get("/v1/calibration").json()["measurements"]
    finally:
        _stop(server)
    state_mb = (tmp_path / "state.sqlite3").stat().st_size / MIB
    started = time.monotonic()
    server = start_serve(tmp_path, port, "--cache-mb", str(cache_mb))
    restart_s = time.monotonic() - started
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/v1/calibration", timeout=10).json()["measurements"] == kept == 2
    finally:
        _stop(server)
    growth = rss_end - rss_start
    print(f"\nsoak: graph ~{size_mib:.1f} MiB, RSS +{growth:.0f} MiB, state file {state_mb:.1f} MiB, restart {restart_s:.1f} s")
    assert growth < cache_mb + 64, growth  # kept whole, 24 jobs of one graph were 24 copies (~170 MiB) and more
    assert state_mb < cache_mb / 4, state_mb  # the kept reports' graphs, once each, within a quarter of the budget
    assert restart_s < 10, restart_s
