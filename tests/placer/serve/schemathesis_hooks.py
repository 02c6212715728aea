"""Schemathesis hooks for test_schemathesis (its ``SCHEMATHESIS_HOOKS``): each generated request its own idempotency key.

A key binds to the first request sent with it: a different request with the same key gets 422 (``occupancy.py``), a
rule of the server's state that no schema can state. Generated keys repeat (``0``, ``null``) across generated bodies,
so each valid key gets a fresh prefix before it is sent (schemathesis's own advice for such fields: a ``before_call``
hook); a key the schema forbids (too long, a space in it) is sent as generated, to be refused.
"""

from __future__ import annotations

import itertools
import re

import schemathesis

_SERIAL = itertools.count()
_KEY = re.compile(r"[\x21-\x7e]{1,255}")  # the Idempotency-Key header's schema (placer.serve.http)


@schemathesis.hook
def before_call(context, case, **kwargs) -> None:
    """Give the case's Idempotency-Key, if it has a valid one, a prefix no other case has."""
    for name, value in list((case.headers or {}).items()):
        if name.lower() == "idempotency-key" and isinstance(value, str) and _KEY.fullmatch(value):
            case.headers[name] = f"{next(_SERIAL)}.{value}"[:255]


@schemathesis.check
def schema_valid_requests_pass_field_validation(ctx, response, case) -> None:
    """A request made to fit the schema is never refused field by field: a 422 whose ``detail`` is the list of what is
    wrong means the service's validation and its published schema disagree (``1044.0`` for an integer was one). A
    one-line 422 is a rule no schema states (a graph with no ops, an unknown device, a lease renewed that has none):
    test_schemathesis's configuration lets positive_data_acceptance take it."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return
    detail = response.json().get("detail")
    if isinstance(detail, list):
        raise AssertionError(f"a schema-valid request was refused field by field: {detail[:3]}")
