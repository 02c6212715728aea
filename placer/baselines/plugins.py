"""Policy plug-ins: callables registered under the entry-point group ``placer.policies``.

A plug-in's callable takes ``(spec: PolicySpec, context: PolicyContext)`` and returns a
:class:`placer.baselines.policy.Policy`. This keeps ``placer`` free of torch: the learned policy
lives in ``placer.policies`` and registers itself as ``learned``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points

ENTRY_POINT_GROUP = "placer.policies"


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def plugin_names() -> list[str]:
    """The names of the installed policy plug-ins, sorted."""
    return sorted(_entry_points())


def plugin_factory(kind: str) -> Callable | None:
    """The factory of plug-in ``kind``, or None if no plug-in has that name (ImportError if it cannot load)."""
    entry = _entry_points().get(kind)
    return entry.load() if entry is not None else None
