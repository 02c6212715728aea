"""JSON Schema's ``integer`` in a strict pydantic model: a number with no fractional part, ``1044`` or ``1044.0``.

A strict pydantic ``int`` refuses ``1044.0``; JSON Schema, and so every schema placer publishes (the service's
OpenAPI, the job-graph document), calls it an integer. :data:`WHOLE_FLOATS`, put last in an int field's
``Annotated`` (after its ``Field`` bounds, which so stay in its JSON schema), makes the field take what its schema
says: a finite float with no fractional part becomes that int; ``1044.5`` is refused (``int_from_float``), NaN and
the infinities too (``finite_number``); anything else (``true``, ``"3"``) goes on to strict int validation, which
refuses it as before.

    Degree = Annotated[int, Field(ge=1, le=4096), WHOLE_FLOATS]
"""

from __future__ import annotations

import math

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError


def whole(value: object) -> object:
    """``value`` as an int when it is a float with no fractional part; a float with one (or NaN, an infinity) is
    refused with pydantic's own error; any other value is returned as it came, for the int validation after this."""
    if not isinstance(value, float):
        return value
    if not math.isfinite(value):
        raise PydanticCustomError("finite_number", "Input should be a finite number")
    if not value.is_integer():
        raise PydanticCustomError("int_from_float", "Input should be a valid integer, got a number with a fractional part")
    return int(value)


WHOLE_FLOATS = BeforeValidator(whole)
