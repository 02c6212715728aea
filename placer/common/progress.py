"""Progress bars that keep logs clean."""

from __future__ import annotations


def bar_off(progress: bool) -> bool | None:
    """tqdm's ``disable`` for a bar shown when ``progress``: True (none), else None, which shows it only where its stream
    is a terminal, so that a log gets no carriage-return redraws."""
    return None if progress else True
