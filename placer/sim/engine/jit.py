"""How the engine's kernels are compiled: numba, cached beside the package, with no reference counting.

A kernel allocates nothing and holds no numba container (the run's arrays come from Python, a shape's id from
:mod:`~placer.sim.engine.shapes`' arrays), so it needs none of numba's runtime (``_nrt=False``, numba's flag for
such functions). With it, every call of a kernel that takes a run's arrays (``c``, some fifty) took and dropped a
reference to each of them: measured on the tuning stage's streams, those atomic counts were most of the engine's time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])
_WITHOUT_RUNTIME: dict[str, Any] = {"_nrt": False}  # numba's option for functions that need none of its runtime


def kernel(function: F) -> F:
    """``function`` compiled by numba in nopython mode, cached beside the package, without its runtime: it may not
    allocate (no ``np.empty``, ``np.sort`` or slice copies) or build typed containers."""
    return cast(F, njit(cache=True, **_WITHOUT_RUNTIME)(function))
