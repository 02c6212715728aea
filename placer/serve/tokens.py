"""The service's bearer token, read at start: from a file only its owner may read, and too strong to guess.

:func:`read_token` takes the first word of ``--token-file`` or ``$PLACER_TOKEN``; each of these stops
the start in one line (:class:`~placer.serve.errors.ServeSetupError`):

- a token file any other user may read or write (any group or other permission bit: ``chmod 600``);
- a token of less than :data:`MIN_TOKEN_BITS` bits, counted as if each character were drawn at
  random from the smallest usual alphabet holding them all (digits: 3.3 bits a character, hex: 4,
  base64url: 6, printable ASCII: 6.6), or of fewer than :data:`MIN_DISTINCT_CHARS` distinct
  characters (``aaaa...``); so at least 22 base64url or 32 hex characters. A bound, not a proof:
  a long dictionary word passes; the message says how to make a random one (:data:`MAKE_ONE`);
- a token with characters outside printable ASCII (a header could not carry it).

(A 4-digit token was guessed in 8.4 s over loopback by the audit of issue 54.)
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from placer.common.textfile import read_text
from placer.serve.errors import ServeSetupError

MIN_TOKEN_BITS = 128
MIN_DISTINCT_CHARS = 8
MAX_TOKEN_FILE_BYTES = 64 * 1024
MAKE_ONE = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'
ALPHABETS = ((re.compile(r"[0-9]+"), 10), (re.compile(r"[0-9a-f]+|[0-9A-F]+"), 16), (re.compile(r"[A-Za-z0-9_\-+/=]+"), 64))
PRINTABLE = re.compile(r"[\x21-\x7e]+")


def token_bits(token: str) -> float:
    """The most entropy ``token`` can hold, in bits (module docstring): its length times the bits of a character of the
    smallest alphabet that holds it; 0 with fewer than :data:`MIN_DISTINCT_CHARS` distinct characters."""
    if len(set(token)) < MIN_DISTINCT_CHARS:
        return 0.0
    size = next((n for pattern, n in ALPHABETS if pattern.fullmatch(token)), 94)
    return len(token) * math.log2(size)


def check_token(token: str, source: str) -> str:
    """``token`` if strong enough (module docstring); :class:`ServeSetupError` naming ``source`` otherwise."""
    if not PRINTABLE.fullmatch(token):
        raise ServeSetupError(f"the bearer token from {source} must be printable ASCII without spaces; make one with {MAKE_ONE}")
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        held = f"{bits:.0f} bits at most" if bits else f"only {len(set(token))} distinct characters"
        raise ServeSetupError(
            f"the bearer token from {source} is too weak to stand guessing ({len(token)} characters, {held}; {MIN_TOKEN_BITS} bits "
            f"needed: 22+ random base64url or 32+ hex characters); make one with {MAKE_ONE}"
        )
    return token


def read_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token: the first word of ``token_file`` (which only its owner may read or write) or ``$PLACER_TOKEN``,
    checked (:func:`check_token`); None if neither is given. :class:`ServeSetupError` in one line otherwise."""
    if token_file is None:
        given = environ.get("PLACER_TOKEN")
        return check_token(given, "PLACER_TOKEN") if given else None
    words = read_text(token_file, what="token file", error=ServeSetupError, max_bytes=MAX_TOKEN_FILE_BYTES).split()
    if not words:
        raise ServeSetupError(f"token file {str(token_file)!r} is empty")
    mode = stat.S_IMODE(os.stat(token_file).st_mode)
    if mode & 0o077:
        raise ServeSetupError(
            f"token file {str(token_file)!r} may be read or written by other users (mode {mode:04o}): chmod 600 {str(token_file)!r}"
        )
    return check_token(words[0], f"token file {str(token_file)!r}")
