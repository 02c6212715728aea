"""A uvicorn server run on a thread for tests on a real loopback socket."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn


@contextlib.contextmanager
def running(server: uvicorn.Server, start_timeout_s: float = 20.0) -> Iterator[int]:
    """Run ``server`` (bound to port 0) on a daemon thread until the block ends; yields the port it got."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def loopback(app) -> uvicorn.Server:
    """A plain uvicorn server for ``app`` on 127.0.0.1, any free port."""
    return uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
