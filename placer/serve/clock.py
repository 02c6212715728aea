"""The service's clocks: leases run on the monotonic clock; wall time only where a time must survive a restart.

A step of the wall clock (NTP, an operator's ``date -s``) neither frees a lease early nor holds one late: a lease runs
out ``lease_s`` seconds of :attr:`Clock.monotonic` after it was granted or renewed. The state file keeps the wall time
it runs out at (``expires_at_s``: the only time that means anything to another process, or after a restart); read
back, the lease's remaining time is that less the wall time now, never more than ``lease_s`` (a clock stepped back
while the server was down cannot lengthen a lease) and never less than 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    """``monotonic``: seconds for deadlines (never steps); ``wall``: Unix time, for what is stored and shown."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time

    def deadline(self, lease_s: float) -> tuple[float, float]:
        """(monotonic deadline, wall time it falls at) of a lease of ``lease_s`` granted now."""
        return self.monotonic() + lease_s, self.wall() + lease_s

    def restored(self, expires_at_s: float, lease_s: float) -> float:
        """The monotonic deadline of a stored lease that runs out at wall time ``expires_at_s``, within its ``lease_s``."""
        remaining = min(max(expires_at_s - self.wall(), 0.0), lease_s)
        return self.monotonic() + remaining
