"""Idle and slow peers against a real ``placer serve`` on loopback: are normal requests still answered?

    python benchmarks/bench_connections.py [--idle 200] [--slow 64] [--slow-addresses 1] [--requests 20]

Starts ``placer serve --memory-only --port 0`` (default settings: 64 requests at once, 16
connections per client address, 5 s to send headers), opens ``--idle`` connections that send
nothing from 127.0.0.1, and ``--slow`` connections spread over ``--slow-addresses`` addresses
(127.0.0.2 on) that send headers and one byte of a 5,000-byte body, then trickle one byte a
second each and reconnect (at most once a second each) when the server closes them. Then times
``--requests`` normal placements and health checks from 127.0.0.1, counts the idle connections
the server has closed 6 s later, and the slow connections it closed (and how many it answered 408).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import ipaddress
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

from tests.placer.toys import chain

SLOW_HEAD = b"POST /v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"


def start(extra: list[str] | None = None, token: str | None = None) -> tuple[subprocess.Popen, int]:
    """A ``placer serve`` on a free loopback port (``extra``: more options; ``token``: its PLACER_TOKEN) and that port."""
    command = [sys.executable, "-m", "placer", "serve", "--cluster", "pacml", "--heuristic", "lean", "--memory-only", "--port", "0"]
    env = {k: v for k, v in os.environ.items() if k != "PLACER_TOKEN"} | ({"PLACER_TOKEN": token} if token else {})
    proc = subprocess.Popen([*command, *(extra or [])], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
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
    """Whether the server has closed ``sock`` (after an answer, such as a 503 to make room, or none)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


class Tricklers:
    """``count`` slow bodies over ``addresses`` source addresses, kept open by a thread until :meth:`stop`."""

    def __init__(self, port: int, count: int, addresses: int) -> None:
        self.port, self.stopped = port, threading.Event()
        self.sources = [str(ipaddress.IPv4Address("127.0.0.2") + i % addresses) for i in range(count)]
        self.socks: list[socket.socket | None] = [self._open(source) for source in self.sources]
        self.closed = self.answered_408 = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, source: str) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5, source_address=(source, 0))
            sock.sendall(SLOW_HEAD)
            return sock
        except OSError:
            return None

    def _run(self) -> None:
        while not self.stopped.wait(1.0):
            for i, sock in enumerate(self.socks):
                if sock is not None and not self._closed_by_server(sock):
                    with contextlib.suppress(OSError):
                        sock.send(b" ")
                    continue
                if sock is not None:
                    sock.close()
                self.socks[i] = self._open(self.sources[i])

    def _closed_by_server(self, sock: socket.socket) -> bool:
        sock.setblocking(False)
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        finally:
            sock.setblocking(True)
        self.closed += 1
        self.answered_408 += data.startswith(b"HTTP/1.1 408")
        return True

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(30)
        for sock in self.socks:
            if sock is not None:
                sock.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--slow", type=int, default=64)
    parser.add_argument("--slow-addresses", type=int, default=1, help="source addresses the slow bodies come from (127.0.0.2 on)")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="a few peers and requests, to check the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.idle, args.slow, args.slow_addresses, args.requests = 4, 4, 2, 2
    body = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()
    proc, port = start()
    try:
        time.sleep(1.0)
        with contextlib.ExitStack() as stack:
            idle = [stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5)) for _ in range(args.idle)]
            slow = Tricklers(port, args.slow, args.slow_addresses)
            stack.callback(slow.stop)
            time.sleep(1.5)
            places = [timed(port, "POST", "/v1/placements", body) for _ in range(args.requests)]
            health = [timed(port, "GET", "/v1/health", None) for _ in range(args.requests)]
            time.sleep(6.0)
            gone = sum(closed(s) for s in idle)
        for name, results in (("placements", places), ("health", health)):
            statuses = sorted({s for s, _ in results})
            seconds = [t for _, t in results]
            print(f"{name}: statuses {statuses}, median {statistics.median(seconds) * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms")
        print(f"{args.idle} idle connections: {gone} closed by the server within 6.5 s")
        print(
            f"{args.slow} slow bodies from {args.slow_addresses} addresses, trickling and reconnecting: "
            f"{slow.closed} closed by the server ({slow.answered_408} answered 408)"
        )
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
