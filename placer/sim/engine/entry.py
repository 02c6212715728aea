"""A compiled kernel's entry point for one set of argument types, looked up once (numba's dispatcher types every
argument at every call: for a run's ~60 arrays that costs more than the kernel)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_ENTRIES: dict[tuple, Callable[..., Any]] = {}  # (kernel, layout of its arguments) -> entry point: an exact memo


def compiled(kernel, args: tuple) -> Callable[..., Any]:
    """The compiled ``kernel`` (a numba dispatcher) for these arguments' types: typed once per layout of arguments
    (:func:`layout`: dtypes, dimensions, contiguity, writability), not at every call (a stream returns for prices
    many times, and a recipe runs thousands of streams; numba would type their ~60 arrays each time)."""
    key = (id(kernel), layout(args))
    entry = _ENTRIES.get(key)
    if entry is None:
        signature = tuple(kernel.typeof_pyval(a) for a in args)
        # the overload already compiled, else loaded from the cache beside the package, else compiled (its own key in
        # kernel.overloads may differ from the signature asked for: a fresh compile keys it by the types it inferred)
        entry = _ENTRIES[key] = kernel.compile(signature)
    return entry


def layout(value: Any) -> Any:
    """What numba's type of ``value`` depends on, cheaply: an array's dtype, dimensions, contiguity and writability; a
    named tuple's class and fields' layouts; a typed dict's numba type; else the Python type."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return (value.dtype.str, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned)
    if isinstance(value, tuple):
        return (type(value), tuple(layout(v) for v in value))
    numba_type = getattr(value, "_numba_type_", None)
    return numba_type if numba_type is not None else type(value)
