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


def test_sigterm_interrupts_like_ctrl_c_within_the_block_only() -> None:
    import os
    import signal

    from placer.common.pool import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_ends_a_pools_workers_as_ctrl_c_does(tmp_path) -> None:
    """A process killed by SIGTERM while its pool works (``kill PID``, a batch scheduler) takes its workers with it: the
    CLI holds :func:`sigterm_as_interrupt` around every command. Without it the workers ran on as orphans."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "work.py"
    script.write_text(
        "import sys, time\n"
        "from placer.common.pool import sigterm_as_interrupt, spawn_pool\n"
        "if __name__ == '__main__':\n"
        "    with sigterm_as_interrupt(), spawn_pool(2) as pool:\n"
        "        futures = [pool.submit(time.sleep, 60) for _ in range(2)]\n"
        "        while not all(f.running() for f in futures):\n"
        "            time.sleep(0.01)\n"
        "        print(*pool._processes, flush=True)\n"
        "        time.sleep(60)\n"
    )
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert process.stdout is not None
    workers = [int(pid) for pid in process.stdout.readline().split()]
    assert len(workers) == 2
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) != 0
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in workers if os.path.exists(f"/proc/{pid}")]
    for pid in left:  # a failing run leaves no orphans to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their pool's process"
