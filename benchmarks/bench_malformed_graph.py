"""Time and peak RSS of the placement request path (Occupancy.place) on graphs at the body limit.

    python benchmarks/bench_malformed_graph.py valid   # 86,593 well-formed ops: over the op limit
    python benchmarks/bench_malformed_graph.py ids     # 499,972 ops of only an id (the audit's case, at 8 MiB)
    python benchmarks/bench_malformed_graph.py zeros   # 4,194,204 ops that are the number 0
    python benchmarks/bench_malformed_graph.py bad     # 86,593 ops whose compute_s is a string
    python benchmarks/bench_malformed_graph.py --smoke # each case on a 64 KiB body, to check the script runs

Run one case per process: peak RSS (ru_maxrss) only grows.
"""

from __future__ import annotations

import resource
import sys
import time

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from placer.serve.settings import DEFAULT_MAX_BODY_BYTES, ServiceSettings
from tests.placer.toys import toy_cluster

HEAD = '{"beta":1.0,"graph":{"schema":"placer.job_graph","schema_version":2,"name":"g","graph":{"edges":[],"nodes":['
OPS = {
    "valid": '{{"id":"n{}","name":"x","pass":"forward","compute_s":1.0,"param_bytes":0,"activation_bytes":0}}',
    "ids": '{{"id":"n{}"}}',
    "zeros": "0",
    "bad": '{{"id":"n{}","name":"x","pass":"forward","compute_s":"1","param_bytes":0,"activation_bytes":0}}',
}


def body_of(kind: str, limit: int = DEFAULT_MAX_BODY_BYTES) -> tuple[bytes, int]:
    """A placement request whose graph has as many ops of ``kind`` as fit in ``limit`` bytes."""
    parts, size = [], len(HEAD) + 4
    while size < limit - 200:
        parts.append(OPS[kind].format(len(parts)))
        size += len(parts[-1]) + 1
    return (HEAD + ",".join(parts) + "]}}}").encode(), len(parts)


def main(kind: str, limit: int = DEFAULT_MAX_BODY_BYTES) -> None:
    body, ops = body_of(kind, limit)
    occupancy = create_app(toy_cluster(2, 2, inter=(1e9, 0.0)), make_heuristic("fixed:1"), ServiceSettings()).state.occupancy
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    try:
        occupancy.place(occupancy.parse(body))
        outcome = "accepted"
    except Exception as exc:  # the outcome is what is measured
        outcome = f"{type(exc).__name__}: {str(exc)[:120]}"
    elapsed = time.perf_counter() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    print(f"{kind}: {ops} ops, {len(body) / 2**20:.1f} MiB, {elapsed:.2f} s, peak RSS +{grown:.0f} MB -> {outcome}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--smoke"]:
        for case in OPS:
            main(case, 64 * 1024)
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "ids")
