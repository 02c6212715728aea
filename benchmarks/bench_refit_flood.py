"""Does a flood of valid step-time reports slow placements down? (issue 30: p99 within 2x idle)

    python benchmarks/bench_refit_flood.py [--placements 300] [--rounds 5] [--report-rate R] [--in-process] [--smoke]

On ``dgx8x8`` with ``fixed:8``: 6 jobs of 3 graphs are placed, then the placement latency of
AlexNet (place + release, each a request answered before the next is sent) is measured idle, and
again while a flood of step-time reports (1.0-1.2x the prediction) for those jobs arrives as fast
as the service answers them, so that the background refit runs back to back. Idle and flood are
measured the same way in the same run. Prints p50 / p99 of both, their ratio, and how many reports
were taken (202), refused for their rate (429) and refits made.

By default the service is the real one, ``placer serve``'s uvicorn server in a process of its own
on loopback (its refits in its worker process); the measured client is this process (httpx, one
kept-alive connection) and the flood another process that writes ready-made HTTP requests on one
kept-alive socket (a client costs the service's host little CPU, as a remote one would cost none).
The service's per-client rate limit applies (all clients are 127.0.0.1): past a burst of 20 the
flood's reports get 429 at once, about 2 a second are taken (``--report-rate R``: R a second, so that
with a large R every report is taken and checked, kept and refitted). On a 2-core machine the four
processes (service, its refit worker, client, flood) share the cores: the flood measures the
service's work for the reports and refits plus that sharing.

``--in-process``: the former measurement, the app in this process through ``TestClient`` with the
flood on a second thread; the flooding client's own Python then competes for this process's GIL
with the measured client, which a service does not suffer from its remote clients.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import threading
import time
from multiprocessing.synchronize import Event

import httpx
import numpy as np
from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.cluster.topology import load_cluster
from placer.graphs.catalog import resolve_graph
from placer.serve.http import create_app
from placer.serve.server import bind, make_server
from placer.serve.settings import ServiceSettings

REPORTERS = ("resnet50", "vgg16", "bert_base")


def latencies(client: TestClient | httpx.Client, body: dict, count: int) -> np.ndarray:
    """Seconds of each of ``count`` placements of ``body`` (each released at once)."""
    out = []
    for _ in range(count):
        start = time.perf_counter()
        job = client.post("/v1/placements", json=body).json()
        out.append(time.perf_counter() - start)
        client.delete(f"/v1/jobs/{job['job_id']}")
    return np.array(out)


class Flood:
    """A flood of reports for ``jobs``, sent while ``go`` is set: :meth:`start`, :meth:`stop` (a summary)."""

    go: threading.Event | Event

    def start(self, jobs: list[dict]) -> None:
        raise NotImplementedError

    def stop(self) -> str:
        raise NotImplementedError


class ThreadFlood(Flood):
    """The flood on a thread of this process, through the same ``TestClient``."""

    def __init__(self, client: TestClient) -> None:
        self.client, self.go, self.done, self.taken = client, threading.Event(), threading.Event(), 0

    def start(self, jobs: list[dict]) -> None:
        self.thread = threading.Thread(target=self._run, args=(jobs,))
        self.thread.start()

    def _run(self, jobs: list[dict]) -> None:
        rng = np.random.default_rng(0)
        while not self.done.is_set():
            if not self.go.wait(0.05):
                continue
            job = jobs[int(rng.integers(len(jobs)))]
            report = {"step_time_s": job["predicted_iteration_s"] * float(rng.uniform(1.0, 1.2))}
            if self.client.post(f"/v1/jobs/{job['job_id']}/step-times", json=report).status_code == 202:
                self.taken += 1

    def stop(self) -> str:
        self.done.set()
        self.thread.join()
        return f"reports taken {self.taken}"


class ProcessFlood(Flood):
    """The flood from another process (:func:`raw_flood`)."""

    def __init__(self, spawn, port: int) -> None:
        self.spawn, self.port = spawn, port
        self.go, self.done, self.counts = spawn.Event(), spawn.Event(), spawn.Array("l", 2)

    def start(self, jobs: list[dict]) -> None:
        self.process = self.spawn.Process(target=raw_flood, args=(self.port, jobs, self.go, self.done, self.counts), daemon=True)
        self.process.start()

    def stop(self) -> str:
        self.done.set()
        self.process.join(60)
        return f"reports taken {self.counts[0]}, refused {self.counts[1]} (429)"


def serve(port: multiprocessing.Queue, settings: ServiceSettings) -> None:
    """``placer serve``'s server for ``dgx8x8`` / ``fixed:8`` on a free loopback port (put on ``port``), until SIGTERM."""
    listener = bind("127.0.0.1", 0)
    port.put(listener.getsockname()[1])
    app = create_app(load_cluster("dgx8x8"), make_heuristic("fixed:8"), settings)
    make_server(app, settings, port=listener.getsockname()[1], log_level="warning").run(sockets=[listener])


def raw_flood(port: int, jobs: list[dict], go: Event, done: Event, counts) -> None:
    """Step-time reports on one kept-alive socket while ``go`` is set, each sent when the last is answered, until ``done``;
    ``counts``: [taken, refused]."""
    rng = np.random.default_rng(0)
    requests = []
    for job in jobs:
        for factor in rng.uniform(1.0, 1.2, 16):
            body = json.dumps({"step_time_s": job["predicted_iteration_s"] * float(factor)}).encode()
            head = f"POST /v1/jobs/{job['job_id']}/step-times HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            requests.append(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    sock: socket.socket | None = None
    buffer, i = b"", 0
    while not done.is_set():
        if not go.wait(0.05):
            continue
        if sock is None:  # (again) after the server closed the connection kept alive while the flood paused
            sock, buffer = socket.create_connection(("127.0.0.1", port)), b""
        try:
            sock.sendall(requests[i % len(requests)])
            i += 1
            while b"\r\n\r\n" not in buffer:
                buffer += _received(sock)
            answer, _, buffer = buffer.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in answer.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(buffer) < length:
                buffer += _received(sock)
            buffer = buffer[length:]
            counts[0 if answer.startswith(b"HTTP/1.1 202") else 1] += 1
        except OSError:
            sock.close()
            sock = None
    if sock is not None:
        sock.close()


def _received(sock: socket.socket) -> bytes:
    data = sock.recv(65536)
    if not data:
        raise ConnectionResetError("the server closed the connection")
    return data


def measure_processes(count: int, rounds: int, settings: ServiceSettings) -> tuple[np.ndarray, np.ndarray, str]:
    spawn = multiprocessing.get_context("spawn")
    port_queue: multiprocessing.Queue = spawn.Queue()
    server = spawn.Process(target=serve, args=(port_queue, settings), daemon=False)  # not daemonic: it has a worker process of its own
    server.start()
    try:
        port = port_queue.get(timeout=120)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(600):  # the app starts after the port is bound
                try:
                    if client.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            return _measure(client, count, ProcessFlood(spawn, port), rounds)
    finally:
        server.terminate()
        server.join(60)
        if server.is_alive():
            server.kill()


def measure_in_process(count: int, rounds: int, settings: ServiceSettings) -> tuple[np.ndarray, np.ndarray, str]:
    with TestClient(create_app(load_cluster("dgx8x8"), make_heuristic("fixed:8"), settings)) as client:
        return _measure(client, count, ThreadFlood(client), rounds)


def _measure(client: TestClient | httpx.Client, count: int, flood: Flood, rounds: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Latencies idle and under ``flood``, in ``rounds`` alternating blocks (so that whatever else the host runs weighs on
    both alike): each round an idle block (the flood paused, no refit running), then a flood block."""
    body = {"graph": resolve_graph("alexnet").to_dict(), "beta": 1.0}
    placed = [client.post("/v1/placements", json={"graph": resolve_graph(g).to_dict(), "beta": 1.0}).json() for g in REPORTERS * 2]
    flood.start([job for job in placed if job["accepted"]])
    flood.go.set()
    _until(client, lambda state: state["refits"] >= 1)  # the first refit starts the service's refit worker: not measured
    idle, busy, started, mark = [], [], 0, 0
    latencies(client, body, 5)  # warm the caches
    for k in range(rounds):
        n = count // rounds + (k < count % rounds)
        flood.go.clear()
        state = _until(client, lambda state: not state["pending"])
        started += state["refits"] - mark if k else 0  # refits the last flood block started, waited for
        idle.append(latencies(client, body, n))
        flood.go.set()
        time.sleep(0.05)
        mark = client.get("/v1/calibration").json()["refits"]
        busy.append(latencies(client, body, n))
    summary = flood.stop()
    state = _until(client, lambda state: not state["pending"])
    started += state["refits"] - mark
    refits = f"refits {state['refits']} ({started} started by the flood blocks)"
    kept = f"kept {state['measurements']}, {refits}, last error {state['last_error']}"
    return np.concatenate(idle), np.concatenate(busy), f"{summary}; {kept}"


def _until(client: TestClient | httpx.Client, done, timeout_s: float = 120.0) -> dict:
    """The calibration state once ``done(state)`` (or after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not done(state := client.get("/v1/calibration").json()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placements", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5, help="idle and flood blocks alternate this many times")
    parser.add_argument("--report-rate", type=float, default=None, help="reports a client may send per second (default: the service's)")
    parser.add_argument("--in-process", action="store_true", help="the app in this process (TestClient), the flood on a thread")
    parser.add_argument("--smoke", action="store_true", help="a few placements, to check the script runs")
    args = parser.parse_args()
    count, rounds = (10, 2) if args.smoke else (args.placements, args.rounds)
    settings = ServiceSettings() if args.report_rate is None else ServiceSettings(report_rate_per_s=args.report_rate)
    idle, busy, summary = (measure_in_process if args.in_process else measure_processes)(count, rounds, settings)
    p = {name: (np.percentile(x, 50) * 1e3, np.percentile(x, 99) * 1e3) for name, x in (("idle", idle), ("flood", busy))}
    where = "in process (TestClient, flood on a thread)" if args.in_process else "placer serve on loopback, flood from another process"
    print(f"{where}: {count} placements idle, {count} during the flood; {summary}")
    for name, (p50, p99) in p.items():
        print(f"  {name:<6} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    print(f"p99 flood / idle: {p['flood'][1] / p['idle'][1]:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
