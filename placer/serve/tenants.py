"""The service's clients: named tenants, each with its own bearer token, read once at start from a TOML file.

    [tenants.alice]
    token = "..."            # at least 128 bits: python -c "import secrets; print(secrets.token_urlsafe(32))"

    [tenants.ops]
    token = "..."
    admin = true             # may act on every job and sees every job id
    calibration = "trusted"  # its step-time reports alone may move the cluster's shared constants

A tenant owns the jobs it places: only it (or an admin) may release, renew or report on them, or
get a stored answer back by replaying its ``Idempotency-Key`` (keys are scoped per tenant); a plain
tenant sees other tenants' devices as busy, without their job ids. A server with one token
(``--token-file``, ``PLACER_TOKEN``) or none (loopback) has one tenant, :data:`DEFAULT_TENANT`:
admin and trusted for calibration, as a single-tenant cluster's one client is.

What the file may not hold, each refused at start in one line (:class:`TenantsFileError`): a file
group or others may read or write, a token of fewer than :data:`MIN_TOKEN_BITS` bits (judged by its
length and alphabet: 22 URL-safe base64 characters, 32 hex digits) or of fewer than
:data:`MIN_DISTINCT_CHARS` distinct characters, a token two tenants share, a name that is not
:data:`NAME_PATTERN` or is reserved (:data:`RESERVED_NAMES`: ``default``, the single tenant's), an unknown key.
"""

from __future__ import annotations

import hmac
import math
import string
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from placer.serve.errors import TenantsFileError

MIN_TOKEN_BITS = 128
MIN_DISTINCT_CHARS = 8  # "aaaa...": long, not secret
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
URLSAFE = frozenset(string.ascii_letters + string.digits + "-_")
HEX = frozenset(string.hexdigits)


class Tenant(BaseModel):
    """A named client. ``admin``: acts on and sees every job; ``calibration = "trusted"``: its reports alone may move the
    cluster's shared constants (others' need several distinct tenants to agree: :mod:`placer.serve.refit_worker`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=NAME_PATTERN)
    token: str = Field(default="", repr=False, max_length=1024)
    admin: bool = False
    calibration: Literal["untrusted", "trusted"] = "untrusted"

    @property
    def trusted(self) -> bool:
        return self.calibration == "trusted"

    def may_act_on(self, owner: str | None) -> bool:
        """Whether this tenant may act on (release, renew, report on, see the id of) a job of ``owner``.

        ``owner`` None: a job of a state file written before tenants (its server's one tenant): admins only."""
        return self.admin or owner == self.name

    def scoped(self, idempotency_key: str) -> str:
        """``idempotency_key`` in this tenant's scope, as stored: ``NAME KEY``, every tenant's, the single tenant's too.

        A name holds no space (:data:`NAME_PATTERN`), so the stored key's first space ends the name: no tenant's scoped
        key equals another's, whatever the keys (a client's may hold ``/``, or look like another's scoped key)."""
        return f"{self.name} {idempotency_key}"


DEFAULT_TENANT = Tenant(name="default", admin=True, calibration="trusted")
RESERVED_NAMES = frozenset({DEFAULT_TENANT.name})  # a tenants file may not name these: the single tenant's, admin and trusted


def legacy_key(scoped: str) -> str | None:
    """The key a stored answer of the same request had before every key was scoped, or None: only the single tenant's
    (:data:`DEFAULT_TENANT`, which no tenants file may name) were stored unscoped, and only a server of that one tenant
    reads them back; other tenants' earlier ``NAME/KEY`` answers are not read (a retry across the upgrade is placed anew)."""
    name, _, key = scoped.partition(" ")
    return key if name == DEFAULT_TENANT.name and key else None


class _TenantEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    token: str = Field(min_length=1, max_length=1024)
    admin: bool = False
    calibration: Literal["untrusted", "trusted"] = "untrusted"


class _TenantsDocument(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    tenants: dict[str, _TenantEntry] = Field(min_length=1)


class Tenants:
    """The tenants a server knows, resolved from a request's ``Authorization`` header by :meth:`resolve`."""

    def __init__(self, tenants: list[Tenant], *, open_access: bool = False) -> None:
        """``open_access``: no token needed; every request is the one tenant's (a tokenless loopback server)."""
        if open_access and len(tenants) != 1:
            raise ValueError("open access has exactly one tenant")
        self.tenants, self.open_access = tuple(tenants), open_access
        self._expected = [(f"Bearer {t.token}".encode(), t) for t in tenants]

    @classmethod
    def single(cls, token: str | None) -> Tenants:
        """The one tenant of a server with one token (or, None, no token): :data:`DEFAULT_TENANT`."""
        if token is None:
            return cls([DEFAULT_TENANT], open_access=True)
        return cls([DEFAULT_TENANT.model_copy(update={"token": token})])

    def resolve(self, authorization: bytes) -> Tenant | None:
        """The tenant whose token ``authorization`` (``Bearer TOKEN``) carries, or None; every token is compared in constant
        time, so the answer's timing tells nothing of which token nearly matched."""
        if self.open_access:
            return self.tenants[0]
        found = None
        for expected, tenant in self._expected:
            if hmac.compare_digest(authorization, expected):
                found = tenant
        return found

    @property
    def trusted(self) -> frozenset[str]:
        """Names of the tenants trusted for calibration."""
        return frozenset(t.name for t in self.tenants if t.trusted)


def token_bits(token: str) -> float:
    """Bits of entropy ``token`` can hold at most, by its length and the smallest usual alphabet it fits."""
    alphabet = 16 if set(token) <= HEX else 64 if set(token) <= URLSAFE else 94
    return len(token) * math.log2(alphabet)


def weak_token(token: str) -> str | None:
    """Why ``token`` is too weak to guard the service, or None."""
    if token_bits(token) < MIN_TOKEN_BITS:
        return f"holds at most {token_bits(token):.0f} bits; at least {MIN_TOKEN_BITS} are needed (e.g. 22 URL-safe characters)"
    if len(set(token)) < MIN_DISTINCT_CHARS:
        return f"has {len(set(token))} distinct characters: it is not random"
    if any(c.isspace() or not c.isprintable() for c in token):
        return "holds spaces or control characters"
    return None


def load_tenants(path: Path) -> Tenants:
    """The tenants of the TOML file at ``path`` (module docstring); :class:`TenantsFileError` in one line for a file that
    cannot be used."""
    where = f"tenants file {str(path)!r}"
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TenantsFileError(f"{where} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if mode & 0o077:
        raise TenantsFileError(f"{where} is open to group or others (mode {mode & 0o777:o}): chmod 600 it")
    try:
        document = _TenantsDocument.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise TenantsFileError(f"{where} is not TOML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise TenantsFileError(f"{where}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    tenants, seen = [], dict[str, str]()
    for name, entry in document.tenants.items():
        try:
            tenant = Tenant(name=name, **entry.model_dump())
        except ValidationError:
            raise TenantsFileError(f"{where}: tenant name {name[:80]!r} must be 1 to 64 letters, digits, '_', '.' or '-'") from None
        if name in RESERVED_NAMES:
            raise TenantsFileError(
                f"{where}: tenant name {name!r} is reserved (the single tenant of a server without tenants): pick another"
            )
        if (why := weak_token(entry.token)) is not None:
            raise TenantsFileError(f"{where}: the token of tenant {name!r} {why}")
        if entry.token in seen:
            raise TenantsFileError(f"{where}: tenants {seen[entry.token]!r} and {name!r} share a token")
        seen[entry.token] = name
        tenants.append(tenant)
    return Tenants(tenants)
