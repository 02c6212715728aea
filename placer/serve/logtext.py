"""User text in the service's logs, escaped: a graph name, a job id or a request path can hold a newline (a forged log
line), a NUL or a bidi control (U+202E: text that reads other than it is); each is shown as its escape.

:func:`printable` escapes one string; :class:`EscapeUserText` is a logging filter that escapes every string argument of
a record (the service's own log calls and uvicorn's access log, whose path is percent-decoded: ``%0a`` is a newline).
"""

from __future__ import annotations

import logging


def printable(text: str) -> str:
    """``text`` with every character that is not printable (controls, format characters such as bidi controls, line
    and paragraph separators, lone surrogates) and the backslash shown as its Python escape (``\\n``, ``\\x00``,
    ``\\u202e``, ``\\\\``); printable text, non-ASCII letters included, unchanged."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text)


class EscapeUserText(logging.Filter):
    """Escapes (:func:`printable`) every string argument of a record it sees; the message's own text is the code's."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(printable(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: printable(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


def escape_logs(*names: str) -> None:
    """Put one :class:`EscapeUserText` on each named logger (a logger that has one keeps it: idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, EscapeUserText) for f in logger.filters):
            logger.addFilter(EscapeUserText())
