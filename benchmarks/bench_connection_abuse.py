"""Slow readers, a team behind one address and a forged X-Forwarded-For against a real ``placer serve`` on loopback.

    python benchmarks/bench_connection_abuse.py slow-readers [--connections 68] [--addresses 5] [--pipelined 400] [--token]
    python benchmarks/bench_connection_abuse.py team [--clients 48]
    python benchmarks/bench_connection_abuse.py forged-xff [--reports 60]
    python benchmarks/bench_connection_abuse.py --smoke        # each attack, tiny (the tests run it)

Starts ``placer serve --memory-only --port 0`` (default settings; ``SERVE_ARGS`` in the
environment adds options; ``--token``: with a bearer token, which the normal client sends, and
the slow readers too with ``--attackers-have-token``, else they get 401s) and then:

- ``slow-readers``: ``--connections`` connections over ``--addresses`` addresses (127.0.0.2 on),
  each with a 4 KB receive buffer, pipeline ``--pipelined`` ``GET /openapi.json`` and never read;
  then, every second for ``--seconds``, a health check and a placement from 127.0.0.1 (5 s
  timeout each): their statuses and times, and how many slow readers the server reset;
- ``team``: ``--clients`` placements at once from 127.0.0.1, each on its own connection: how
  many answered 2xx, 503/429 with Retry-After, or were reset;
- ``forged-xff``: a placement, then ``--reports`` step-time reports from 127.0.0.1, each with
  another ``X-Forwarded-For``: how many were accepted (the report rate limit allows a burst of 20).
"""

from __future__ import annotations

import argparse
import errno
import http.client
import ipaddress
import json
import os
import secrets
import socket
import statistics
import subprocess
import threading
import time
from collections import Counter

from benchmarks.bench_connections import start as serve
from tests.placer.toys import chain

TOKEN = secrets.token_urlsafe(32)  # placer serve refuses a token of under 128 bits


def start(token: bool) -> tuple[subprocess.Popen, int]:
    """bench_connections' server, with ``SERVE_ARGS``'s options and, with ``token``, :data:`TOKEN`."""
    return serve(os.environ.get("SERVE_ARGS", "").split(), TOKEN if token else None)


def call(port: int, method: str, path: str, body: bytes | None = None, headers=None, timeout: float = 5.0):
    """(status or the error's name, seconds, Retry-After or None)."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started, response.getheader("Retry-After")
    except OSError as exc:
        return type(exc).__name__, time.perf_counter() - started, None
    finally:
        conn.close()


def slow_reader(port: int, source: str, pipelined: int, headers: bytes) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(5)
    try:
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % headers * pipelined)
        return sock
    except OSError:
        sock.close()
        return None


def slow_readers(port: int, args, body: bytes, auth: dict) -> None:
    headers = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in auth.items()) if args.attackers_have_token else b""
    sources = [str(ipaddress.IPv4Address("127.0.0.2") + i % args.addresses) for i in range(args.connections)]
    socks = [slow_reader(port, source, args.pipelined, headers) for source in sources]
    print(f"{sum(s is not None for s in socks)} of {args.connections} slow readers connected and sent their requests")
    time.sleep(1.0)
    health, place = [], []
    for second in range(args.seconds):
        tick = time.monotonic()
        health.append(call(port, "GET", "/v1/health"))
        place.append(call(port, "POST", "/v1/placements", body, auth))
        if args.verbose:
            h, p = health[-1], place[-1]
            print(f"t={second + 1:3d} s  health {h[0]} in {h[1] * 1000:.0f} ms, placement {p[0]} in {p[1] * 1000:.0f} ms")
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    for name, results in (("health", health), ("placements", place)):
        statuses = Counter(str(s) for s, _, _ in results)
        ms = sorted(t * 1000 for _, t, _ in results)
        first = next((i + 1 for i, (s, _, _) in enumerate(results) if s == 200), None)
        print(f"{name}: {dict(statuses)}, median {statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms; first 200 at t={first} s")
    reset = sum(s is not None and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNRESET for s in socks)
    print(f"slow readers reset by the server within {args.seconds + 1} s: {reset} of {len(socks)}")
    for sock in socks:
        if sock is not None:
            sock.close()


def team(port: int, args, body: bytes, auth: dict) -> None:
    results: list = []
    barrier = threading.Barrier(args.clients)

    def one() -> None:
        barrier.wait()
        results.append(call(port, "POST", "/v1/placements", body, auth, timeout=30))

    threads = [threading.Thread(target=one) for _ in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ok = sum(isinstance(s, int) and 200 <= s < 300 for s, _, _ in results)
    busy = sum(s in (503, 429) and r is not None for s, _, r in results)
    other = Counter(str(s) for s, _, r in results if not (isinstance(s, int) and 200 <= s < 300) and not (s in (503, 429) and r))
    print(f"{args.clients} placements at once from one address: {ok} 2xx, {busy} 503/429 with Retry-After, other: {dict(other) or 'none'}")


def forged_xff(port: int, args, body: bytes, auth: dict) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/v1/placements", body=body, headers={"Content-Type": "application/json", **auth})
    placed = json.loads(conn.getresponse().read())
    job, predicted = placed["job_id"], placed["predicted_iteration_s"]
    conn.close()
    statuses: Counter = Counter()
    for i in range(args.reports):
        forged = {"X-Forwarded-For": f"10.0.{i // 250}.{i % 250 + 1}"}
        report = json.dumps({"step_time_s": predicted}).encode()
        status, _, _ = call(port, "POST", f"/v1/jobs/{job}/step-times", report, {**auth, **forged})
        statuses[status] += 1
    print(f"{args.reports} reports, each with its own forged X-Forwarded-For: {statuses[202]} accepted; statuses {dict(statuses)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("attack", nargs="?", choices=["slow-readers", "team", "forged-xff"], help="(default with --smoke: all three)")
    parser.add_argument("--smoke", action="store_true", help="every attack, tiny and short: that the script still runs")
    parser.add_argument("--connections", type=int, default=68)
    parser.add_argument("--addresses", type=int, default=5)
    parser.add_argument("--pipelined", type=int, default=400)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--clients", type=int, default=48)
    parser.add_argument("--reports", type=int, default=60)
    parser.add_argument("--verbose", action="store_true", help="each second's health check and placement")
    parser.add_argument("--token", action="store_true", help="run the server with a bearer token (the normal client sends it)")
    parser.add_argument("--attackers-have-token", action="store_true", help="the slow readers send the token too")
    args = parser.parse_args()
    if args.attack is None and not args.smoke:
        parser.error("name an attack (slow-readers, team or forged-xff), or pass --smoke")
    if args.smoke:
        args.connections, args.addresses, args.pipelined, args.seconds, args.clients, args.reports = 4, 2, 20, 2, 6, 24
    body = json.dumps({"graph": chain().to_dict(), "beta": 1.0}).encode()
    auth = {"Authorization": f"Bearer {TOKEN}"} if args.token else {}
    attacks = {"slow-readers": slow_readers, "team": team, "forged-xff": forged_xff}
    for attack in [args.attack] if args.attack else list(attacks):
        proc, port = start(args.token)
        try:
            time.sleep(1.0)
            print(f"== {attack}")
            attacks[attack](port, args, body, auth)
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
