"""A process pool that leaves no workers behind when its caller is interrupted.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager waits, on any exception (Ctrl-C, or SIGTERM
turned into one by ``placer train``), for every task still queued: an interrupted evaluation goes on computing, and a
caller killed while it waits leaves its spawn workers running as orphans. :func:`spawn_pool` cancels the queued tasks
and terminates the workers instead, and shuts down as usual when the block ends normally. A task's own exception,
re-raised in the block by ``future.result()``, ends the block the same way: its sibling tasks are stopped too.
:func:`sigterm_as_interrupt` makes SIGTERM such an exception (the CLI's ``main`` holds it for every command): without
it, a command killed by SIGTERM (``kill PID``, a batch scheduler) ends at once and its workers run on as orphans.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any


def spawn_executor(workers: int, *, initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh processes: spawned, not forked, so none inherits torch's or a server's threads."""
    spawn = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=spawn, initializer=initializer, initargs=initargs)


@contextmanager
def spawn_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """:func:`spawn_executor` for the block's tasks; on an exception in the block (Ctrl-C or SIGTERM included), or one
    that interrupts the final wait for the workers, queued tasks are cancelled and the workers terminated before it
    propagates."""
    pool = spawn_executor(workers)
    try:
        yield pool
        pool.shutdown(wait=True)
    except BaseException:
        terminate(pool)
        raise


@contextmanager
def results_in_order(
    function: Callable[..., Any], calls: Iterable[tuple], *, workers: int = 1, ray: str | None = None
) -> Iterator[Iterator[Any]]:
    """``function(*call)`` of each of ``calls``, yielded in the order of ``calls``, each as soon as it and those before it
    are done: here, one after the other, when ``workers`` is 1; else all submitted at once to ``workers`` spawned
    processes (:func:`spawn_pool`: stopped on an exception in the block) or, given ``ray`` (an address), as Ray tasks of
    one CPU on that cluster (:mod:`placer.common.on_ray`). ``function``: module-level, importable where it runs."""
    if ray is not None:
        from placer.common.on_ray import join, map_on_ray

        join(ray)
        results = map_on_ray(function, calls)
        try:
            yield results
        finally:
            results.close()  # an early end cancels the tasks not read
    elif workers <= 1:
        yield (function(*call) for call in calls)
    else:
        with spawn_pool(workers) as pool:
            yield _in_order([pool.submit(function, *call) for call in calls])


def _in_order(futures: list[Future | None]) -> Iterator[Any]:
    for i, future in enumerate(futures):
        futures[i] = None  # let each result go once it is read
        assert future is not None
        yield future.result()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt in the main thread, as Ctrl-C does: pools end their workers and
    callers save what they hold (``placer train`` a checkpoint) before the process ends. Elsewhere than in the main
    thread (where Python delivers signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel ``pool``'s queued tasks and end its worker processes now, returning once they have exited."""
    # ``_processes`` (pid -> Process) is CPython's, present since 3.2; Python 3.14's public ``terminate_workers`` does
    # the same but does not wait for the processes to exit, so they are taken first and joined after either path.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    stop = getattr(pool, "terminate_workers", None)
    if stop is not None:
        stop()
    else:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
    for process in processes:
        _await_exit(process)


def _await_exit(process: Any, *, grace_s: float = 5.0) -> None:
    """Wait for ``process`` to exit: SIGKILL after ``grace_s`` seconds of ignoring SIGTERM, give up ``grace_s`` later.

    ``is_alive`` is polled rather than trusting one ``join``: the pool's own manager thread may reap the same child at
    the same moment, and a ``join`` that loses that race returns while ``is_alive`` still reads True for an instant.
    """
    for escalate in (process.kill, None):
        deadline = time.monotonic() + grace_s
        while process.is_alive() and time.monotonic() < deadline:
            process.join(timeout=0.05)
        if not process.is_alive() or escalate is None:
            return
        escalate()
