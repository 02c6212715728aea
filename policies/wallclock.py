"""Wall time of a recipe and of each of its stages, counted over every invocation (``wall.jsonl`` in its folder).

A run resumed after a cut counts the time of the invocations before it. An invocation's line is rewritten every
``every_s`` seconds while it runs, so one killed outright (a machine taken back, ``kill -9``) still counts up to its
last beat, not zero.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from placer.common.atomic import write_atomic

WALL = "wall.jsonl"  # one line per invocation of a stage (in its folder) or of the recipe (in --out): its wall seconds


def clocked(folder: Path, begun: float, *, finished: bool) -> dict[str, Any]:
    """Record in ``folder/wall.jsonl`` one invocation's wall seconds since ``begun`` (``time.monotonic()``), and return
    every invocation's so far: ``{"wall_s": total seconds, "invocations": count}``. The invocation's line, written
    before by a beat of :func:`clock`, is rewritten; once ``finished`` it is never rewritten again (the ``finally`` of
    an invocation that finished does not count it twice)."""
    path = folder / WALL
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    ours = bool(lines) and lines[-1].get("begun") == begun
    if not (ours and lines[-1].get("finished")):
        at = time.strftime("%Y-%m-%dT%H:%M:%S")
        line = {"begun": begun, "wall_s": round(time.monotonic() - begun, 1), "finished": finished, "at": at}
        lines = [*lines[:-1], line] if ours else [*lines, line]
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, "".join(json.dumps(entry) + "\n" for entry in lines))
    return {"wall_s": round(sum(float(entry["wall_s"]) for entry in lines), 1), "invocations": len(lines)}


@contextmanager
def clock(folder: Path, every_s: float = 60.0) -> Iterator[Callable[[], dict[str, Any]]]:
    """Count this invocation in ``folder/wall.jsonl``: its line is written now, rewritten every ``every_s`` seconds by a
    daemon thread, and on exit (finished=False unless the block called the yielded ``finish()``, which records it
    finished and returns :func:`clocked`'s totals)."""
    begun = time.monotonic()
    lock, stop = threading.Lock(), threading.Event()

    def mark(finished: bool) -> dict[str, Any]:
        with lock:
            return clocked(folder, begun, finished=finished)

    def beat() -> None:
        while not stop.wait(every_s):
            mark(False)

    mark(False)
    thread = threading.Thread(target=beat, name=f"clock {folder.name}", daemon=True)
    thread.start()
    try:
        yield lambda: mark(True)
    finally:
        stop.set()
        thread.join()
        mark(False)  # a finished line stays as it is
