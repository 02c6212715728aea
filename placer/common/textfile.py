"""Read a user's text file, turning every failure (missing, unreadable, not UTF-8) into one clear error line."""

from __future__ import annotations

from pathlib import Path

from placer.common.errors import PlacerError


def read_text(path: str | Path, *, what: str, error: type[PlacerError] = PlacerError) -> str:
    """The UTF-8 text of ``path``; ``what`` names the file's role in the error (``"job graph"``)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}): is it the right file?") from None
