"""Idle and slow peers against a real ``placer serve`` on loopback: are normal requests still answered?

    python benchmarks/bench_connections.py [--idle 200] [--slow 64] [--requests 20]

Starts ``placer serve --memory-only --port 0`` (default settings: 64 requests at once, 16
connections per client address, 5 s to send headers), opens ``--idle`` connections that send
nothing from 127.0.0.1, ``--slow`` connections from 127.0.0.2 that send headers and one byte of
a 5,000-byte body, then times ``--requests`` normal placements and health checks from 127.0.0.1,
and counts the idle connections the server has closed 6 s later.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import re
import socket
import statistics
import subprocess
import sys
import time

from tests.placer.toys import chain

SLOW_HEAD = b"POST /v1/placements HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"


def start() -> tuple[subprocess.Popen, int]:
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--heuristic", "lean", "--memory-only", "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    text = ""
    for _ in range(5):
        text += proc.stderr.readline().replace("\n", " ")
        if match := re.search(r"on http://127\.0\.0\.1:(\d+)", text):
            return proc, int(match.group(1))
    raise SystemExit(f"no port announced: {text}")


def timed(port: int, method: str, path: str, body: bytes | None) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    finally:
        conn.close()


def closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--slow", type=int, default=64)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="a few peers and requests, to check the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.idle, args.slow, args.requests = 4, 2, 2
    body = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()
    proc, port = start()
    try:
        time.sleep(1.0)
        with contextlib.ExitStack() as stack:
            idle = [stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5)) for _ in range(args.idle)]
            for _ in range(args.slow):
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0)))
                with contextlib.suppress(OSError):
                    sock.sendall(SLOW_HEAD)
            time.sleep(0.5)
            places = [timed(port, "POST", "/v1/placements", body) for _ in range(args.requests)]
            health = [timed(port, "GET", "/v1/health", None) for _ in range(args.requests)]
            time.sleep(6.0)
            gone = sum(closed(s) for s in idle)
        for name, results in (("placements", places), ("health", health)):
            statuses = sorted({s for s, _ in results})
            seconds = [t for _, t in results]
            print(f"{name}: statuses {statuses}, median {statistics.median(seconds) * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms")
        print(f"{args.idle} idle connections: {gone} closed by the server within 6.5 s (with {args.slow} slow bodies sent from 127.0.0.2)")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
