"""Write a file so that a reader (or a crash) sees either the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from placer.common.errors import OutputError


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on a clean exit it replaces ``path`` in one rename.

    On an error the temporary file is removed and ``path`` keeps its old content.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)


def write_atomic(path: str | Path, content: str | bytes | Callable[[IO], None], *, newline: str | None = None) -> Path:
    """Write ``content`` (text, bytes, or a function that writes to an open file) to ``path`` atomically.

    Text is written as UTF-8; a callable gets a text handle (``newline`` as :func:`open`'s) unless it is
    given bytes mode by passing ``content`` as bytes. Returns ``path``.
    """
    with atomic_path(path) as tmp:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        elif isinstance(content, str):
            tmp.write_text(content, encoding="utf-8")
        else:
            with tmp.open("w", encoding="utf-8", newline=newline) as fh:
                content(fh)
    return Path(path)


def check_writable(path: str | Path, *, what: str = "output") -> None:
    """Raise :class:`~placer.common.errors.PlacerError` now if :func:`write_atomic` could not write
    ``path`` later (its folder is missing or not writable, or it is a folder): check before long work."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {what} {str(target)!r}: it is a folder")
    folder = target.parent
    if not folder.is_dir():
        missing = "is a file, not a folder" if folder.exists() else "does not exist"
        raise OutputError(f"cannot write {what} {str(target)!r}: folder {str(folder)!r} {missing}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {what} {str(target)!r}: permission denied")
