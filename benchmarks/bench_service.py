"""Placement query latency, in process and through the HTTP service on loopback.

    python benchmarks/bench_service.py [--policy-file data/policies/pacml.pt] [--requests 200] [--smoke]

1. In process: median and p99 of ``placer.Placer.decide`` with the learned policy (or ``lean``
   without a policy file), cold (a fresh cost model: every schedule computed) and warm (the
   graph seen before), on PipeDream graphs of several sizes, against the 10 ms target.
2. Load test: starts ``placer serve`` on a free loopback port, then for each graph sends
   ``--requests`` reserve-and-release pairs (POST /v1/placements, DELETE /v1/jobs/{id}) at
   concurrency 1 and 32, sending the whole graph and then only its ``graph_key``; prints
   median / p99 POST latency and placements per second.
   Bounded in count and by ``--time-limit`` seconds per phase; the server is stopped at the end.
3. Large graphs: in a fresh process per size, one synthetic graph (a chain of linear layers with
   their backward ops) placed through the service's request path (``Occupancy.place``: parse and
   validate the bytes, build the graph, the cost model's per-graph work, decide), against the
   targets at the service's ``--max-graph-ops`` default: <= 2 s and <= 100 MB above the process's
   resident size before the request. Then the bytes per op or edge of a kept graph and of its
   compiled form and profile (tracemalloc), against the estimates the byte-bounded caches use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from placer import CostModel, load_cluster, resolve_graph
from placer.api import Placer
from placer.baselines.registry import PolicyContext, make_policy

GRAPHS = ("resnet18", "resnet50", "densenet121", "nasnetamobile")


def in_process(policy_file: Path | None, repeats: int) -> None:
    import torch

    torch.set_num_threads(1)
    cluster = load_cluster("pacml")
    policy = make_policy("learned" if policy_file else "lean", PolicyContext(cluster, policy_file=policy_file))
    free, free_in = np.ones(cluster.num_devices, dtype=bool), np.zeros(cluster.num_devices)
    print(f"in-process decide, pacml, policy {policy.name} (1 thread):")
    for name in GRAPHS:
        graph = resolve_graph(name)
        cold, warm = [], []
        for _ in range(max(3, repeats // 10)):
            start = time.perf_counter()
            Placer(CostModel(cluster), policy).decide(graph, free, free_in, beta=0.3)
            cold.append(time.perf_counter() - start)
        session = Placer(CostModel(cluster), policy)
        session.decide(graph, free, free_in, beta=0.3)
        for _ in range(repeats):
            start = time.perf_counter()
            session.decide(graph, free, free_in, beta=0.3)
            warm.append(time.perf_counter() - start)
        w = np.array(warm) * 1e3
        print(
            f"  {name:14s} {graph.num_ops:5d} ops: warm median {np.median(w):6.2f} ms, p99 {np.percentile(w, 99):6.2f} ms "
            f"({10 / np.median(w):.1f}x under 10 ms); cold median {np.median(cold) * 1e3:6.1f} ms"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _phase(client: httpx.AsyncClient, body: dict, requests: int, concurrency: int, time_limit: float):
    latencies: list[float] = []
    stop = time.monotonic() + time_limit
    queue = iter(range(requests))

    async def worker():
        for _ in queue:
            if time.monotonic() > stop:
                return
            start = time.perf_counter()
            response = await client.post("/v1/placements", json=body)
            latencies.append(time.perf_counter() - start)
            job = response.json().get("job_id")
            if job:
                await client.delete(f"/v1/jobs/{job}")

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return np.array(latencies) * 1e3, len(latencies) / (time.perf_counter() - start)


async def load_test(port: int, requests: int, time_limit: float) -> None:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits) as client:
        for name in GRAPHS:
            graph = resolve_graph(name)
            full = {"graph": graph.to_dict(), "beta": 0.3}
            first = (await client.post("/v1/placements", json=full)).json()  # warms the graph's cost cache
            if first.get("job_id"):
                await client.delete(f"/v1/jobs/{first['job_id']}")
            by_key = {"graph_key": first["graph_key"], "beta": 0.3}
            for label, body in (("graph", full), ("graph_key", by_key)):
                for concurrency in (1, 32):
                    lat, qps = await _phase(client, body, requests, concurrency, time_limit)
                    print(
                        f"  {name:14s} {graph.num_ops:5d} ops, {label:9s} concurrency {concurrency:2d}: median {np.median(lat):7.2f} ms, "
                        f"p99 {np.percentile(lat, 99):7.2f} ms, {qps:6.1f} placements/s ({len(lat)} requests)"
                    )


LARGE_SIZES = (5_000, 20_000, 50_000, 200_000)  # ops, forward + backward


def synthetic_graph(ops: int, name: str = "big") -> dict:
    """A graph document named ``name`` of ``ops`` ops: a chain of linear layers and their backward ops (3 edges per 2 ops)."""
    n = ops // 2
    op = {"name": "aten.linear", "param_bytes": 4096.0, "activation_bytes": 8192.0}
    nodes = [{"id": f"f{i}", "pass": "forward", "compute_s": 1e-4, **op} for i in range(n)]
    nodes += [{"id": f"b{i}", "pass": "backward", "compute_s": 2e-4, **op, "param_bytes": 0.0} for i in range(n)]
    edges = [{"source": f"f{i}", "target": f"f{i + 1}", "tensor_bytes": 8192.0} for i in range(n - 1)]
    edges += [{"source": f"b{i + 1}", "target": f"b{i}", "tensor_bytes": 8192.0} for i in range(n - 1)]
    edges += [{"source": f"f{i}", "target": f"b{i}", "tensor_bytes": 8192.0, "local": True} for i in range(n)]
    return {"schema": "placer.job_graph", "schema_version": 2, "name": name, "iterations": 100, "graph": {"nodes": nodes, "edges": edges}}


def one_large(ops: int) -> None:
    """In this (fresh) process: one placement of a synthetic graph; prints a JSON line."""
    import gc
    import resource

    from placer.baselines.registry import make_heuristic
    from placer.serve.occupancy import Occupancy
    from placer.serve.settings import ServiceSettings

    body = json.dumps({"graph": synthetic_graph(ops), "beta": 1.0}).encode()
    gc.collect()
    state = Occupancy(load_cluster("pacml"), make_heuristic("lean"), ServiceSettings(max_graph_ops=10**7, max_graph_edges=10**7))
    state.place(state.parse(json.dumps({"graph": resolve_graph("resnet18").to_dict(), "beta": 1.0}).encode()))  # warm up the code paths
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    resident = int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()
    start = time.perf_counter()
    decision = state.place(state.parse(body))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    transient = (peak - max(before, resident)) / 2**20
    print(json.dumps({"s": seconds, "transient_mb": transient, "body_mb": len(body) / 2**20, "accepted": decision.accepted}))


def large_graphs(sizes: tuple[int, ...] = LARGE_SIZES) -> None:
    from placer.serve.settings import DEFAULT_MAX_GRAPH_OPS

    print(f"large graphs through the request path (fresh process each; the service's default limit is {DEFAULT_MAX_GRAPH_OPS:,} ops):")
    for ops in sizes:
        out = subprocess.run([sys.executable, __file__, "--one-large", str(ops)], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"  {ops:8,d} ops: failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        within = "within" if r["s"] <= 2.0 and r["transient_mb"] <= 100 else "OVER"
        limit = " (the default limit)" if ops == DEFAULT_MAX_GRAPH_OPS else ""
        print(
            f"  {ops:8,d} ops{limit}: body {r['body_mb']:6.1f} MB, {r['s']:6.2f} s, {r['transient_mb']:6.0f} MB transient "
            f"({r['s'] / 2.0:.2f}x of 2 s, {r['transient_mb'] / 100:.2f}x of 100 MB: {within})"
        )


def cache_entry_bytes(ops: int = 20_000) -> None:
    """Bytes per op or edge held by a kept graph and by its compiled form and profile, against the caches' estimates."""
    import tracemalloc

    from placer.cost import model as cost_model
    from placer.graphs.job_graph import job_graph_from_json
    from placer.serve import graphs as occupancy

    text = json.dumps(synthetic_graph(ops))
    cost = CostModel(load_cluster("pacml"))
    tracemalloc.start()
    graph = job_graph_from_json(text, source="synthetic")
    held_graph = tracemalloc.get_traced_memory()[0]
    cost.compile(graph)
    cost.sequential_jct_s(graph)  # builds the profile
    held_compiled = tracemalloc.get_traced_memory()[0] - held_graph
    tracemalloc.stop()
    elements = graph.num_ops + graph.num_edges
    print(
        f"cache entry sizes ({graph.num_ops:,} ops + {graph.num_edges:,} edges): graph {held_graph / elements:.0f} B per element "
        f"(estimate {occupancy.BYTES_PER_GRAPH_ELEMENT}), compiled + profile {held_compiled / elements:.0f} B "
        f"(estimate {2 * cost_model.BYTES_PER_COMPILED_ELEMENT}: {cost_model.BYTES_PER_COMPILED_ELEMENT} each)"
    )


def main() -> None:
    global GRAPHS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy-file", type=Path, default=Path("data/policies/pacml.pt"))
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--large-only", action="store_true", help="only the large-graph phases")
    parser.add_argument("--one-large", type=int, help=argparse.SUPPRESS)  # the per-size child process
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one graph, 2 requests: checks it runs")
    args = parser.parse_args()
    if args.one_large:
        return one_large(args.one_large)
    if args.smoke:
        GRAPHS, args.requests, args.time_limit = GRAPHS[:1], 2, 5.0
    large_graphs((2_000,) if args.smoke else LARGE_SIZES)
    cache_entry_bytes(2_000 if args.smoke else 20_000)
    if args.large_only:
        return
    policy_file = args.policy_file if args.policy_file.exists() else None
    in_process(policy_file, args.requests)
    port = _free_port()
    command = [sys.executable, "-m", "placer", "serve", "--port", str(port)]
    command += ["--policy-file", str(policy_file)] if policy_file else []
    server = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("server did not start") from None
                time.sleep(0.2)
        print(f"load test, placer serve on 127.0.0.1:{port}, POST /v1/placements + DELETE, beta 0.3:")
        asyncio.run(load_test(port, args.requests, args.time_limit))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
