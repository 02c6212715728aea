"""spawn_pool: results as a ProcessPoolExecutor's; an interrupted block ends its workers instead of running its queue."""

from __future__ import annotations

import operator
import time

import pytest

from placer.common.pool import spawn_pool


def test_a_block_that_ends_normally_returns_every_result_in_order() -> None:
    with spawn_pool(2) as pool:
        assert list(pool.map(operator.mul, [1, 2, 3], [4, 5, 6])) == [4, 10, 18]


def test_an_interrupted_block_ends_its_workers_instead_of_waiting_for_its_queue() -> None:
    """Before spawn_pool, leaving the block by Ctrl-C waited for every queued task (here 30 s of sleeping), and a caller
    killed meanwhile left its workers running."""
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), spawn_pool(1) as pool:
        running = pool.submit(time.sleep, 30)
        pool.submit(time.sleep, 30)  # queued behind it
        processes = list(pool._processes.values())  # the workers spawned for the first task
        while not running.running():
            time.sleep(0.01)
        raise KeyboardInterrupt
    assert time.monotonic() - started < 20  # not the 60 s of the two tasks
    assert processes and not any(process.is_alive() for process in processes)
