"""A process pool that leaves no workers behind when its caller is interrupted.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager waits, on any exception (Ctrl-C, or SIGTERM
turned into one by ``placer train``), for every task still queued: an interrupted evaluation goes on computing, and a
caller killed while it waits leaves its spawn workers running as orphans. :func:`spawn_pool` cancels the queued tasks
and terminates the workers instead, and shuts down as usual when the block ends normally.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any


def spawn_executor(workers: int, *, initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh processes: spawned, not forked, so none inherits torch's or a server's threads."""
    spawn = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=spawn, initializer=initializer, initargs=initargs)


@contextmanager
def spawn_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """:func:`spawn_executor` for the block's tasks; on an exception in the block (Ctrl-C or SIGTERM included), queued tasks
    are cancelled and the workers terminated before it propagates."""
    pool = spawn_executor(workers)
    try:
        yield pool
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)


def terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel ``pool``'s queued tasks and end its worker processes now (Python 3.14's ``terminate_workers``, else the same
    by hand)."""
    stop = getattr(pool, "terminate_workers", None)
    if stop is not None:
        stop()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
