"""Read a user's text file, turning every failure (missing, unreadable, not UTF-8, endless) into one clear error line."""

from __future__ import annotations

from pathlib import Path

from placer.common.errors import PlacerError

MAX_TEXT_BYTES = 256 * 1024 * 1024  # far above any graph, trace or config; /dev/zero stops here, not at the memory limit


def read_text(path: str | Path, *, what: str, error: type[PlacerError] = PlacerError, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path``; ``what`` names the file's role in the error (``"job graph"``).

    At most ``max_bytes`` are read: a larger file (or an endless one, ``/dev/zero``) is refused
    without reading further.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{what} {str(path)!r} is over {max_bytes:,} bytes: is it the right file?")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}): is it the right file?") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text mode reads
