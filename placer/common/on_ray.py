"""One connection to a Ray cluster a process, and work mapped over it in order.

Every part of placer that runs on Ray joins through :func:`join`: an unreachable address is one line within seconds
(Ray itself retries for a minute, then aborts the process), ``local`` starts an instance on this machine, and a process
already connected (a Ray worker, or a driver that joined before) keeps its connection. :func:`map_on_ray` runs a
module-level function over argument tuples as Ray tasks and yields the results in the order given, each as soon as it
and those before it are done: the same order, hence the same figures, as a local process pool.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Generator, Iterable
from typing import Any

from placer.common.errors import RayClusterError

CONNECT_TIMEOUT_S = 5.0
CANCEL_WITHIN_S = 10.0  # how long a map ended early waits for its cancelled tasks to end


def import_ray():
    """The ``ray`` module, or a one-line error naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise RayClusterError("the Ray integration needs Ray: pip install -e '.[ray]'") from None
    return ray


def join(address: str | None, *, log_to_driver: bool = False) -> str:
    """Connect this process to the Ray cluster at ``address`` (``HOST:PORT``, ``ray://HOST:PORT``, ``auto``; ``local``
    starts a new instance here even where /tmp/ray names an older one; None: ``RAY_ADDRESS`` or the cluster this process
    runs in) unless it is connected already, and return the connected cluster's ``HOST:PORT``: the address another
    process joins the same cluster by. ``log_to_driver``: the tasks' output printed here, prefixed by their process."""
    ray = import_ray()
    if not ray.is_initialized():
        check_reachable(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=log_to_driver, configure_logging=False)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError, ...: one line is enough
            raise RayClusterError(f"cannot reach a Ray cluster at {address!r}: {first_line(exc)}") from None
    return str(ray.get_runtime_context().gcs_address)


def map_on_ray(function: Callable[..., Any], calls: Iterable[tuple], *, num_cpus: float = 1) -> Generator[Any, None, None]:
    """``function(*call)`` for each of ``calls`` as Ray tasks of ``num_cpus`` CPUs each on the cluster this process
    joined (:func:`join` first), all submitted at once; the results yielded in the order of ``calls``. ``function``
    must be importable where the tasks run (a module-level function of an installed package). Closed before its end
    (a task's error re-raised here, Ctrl-C, a caller that stops reading), it cancels the tasks not read yet, as a local
    pool stops its workers: none keeps a cluster's CPUs after its caller has gone."""
    ray = import_ray()
    remote = ray.remote(num_cpus=num_cpus)(function)
    refs = [remote.remote(*call) for call in calls]
    try:
        for i, ref in enumerate(refs):
            refs[i] = None  # let each result go once it is read
            yield ray.get(ref)
    finally:
        _cancel([ref for ref in refs if ref is not None])


def _cancel(refs: list[Any], within_s: float = CANCEL_WITHIN_S) -> None:
    """Cancel the tasks of ``refs`` (force: a running one's worker is killed) and wait, at most ``within_s`` seconds, until
    each has ended, cancelling again any not ended yet: a task whose worker was being leased when the first cancel came
    can miss it and start afterwards (Ray 2.60 did, on a 1-CPU node)."""
    ray = import_ray()
    deadline = time.monotonic() + within_s
    while refs:
        for ref in refs:
            ray.cancel(ref, force=True)
        left = deadline - time.monotonic()
        if left <= 0:
            return
        _, refs = ray.wait(refs, num_returns=len(refs), timeout=min(left, 0.5), fetch_local=False)


def check_reachable(address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A one-line :class:`RayClusterError` when ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) takes no TCP
    connection within ``timeout_s``; ``local``, ``auto`` and None are left to Ray."""
    if not address or address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayClusterError(f"cannot reach a Ray cluster at {address!r}: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
