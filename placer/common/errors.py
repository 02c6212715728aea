"""Exceptions raised for bad user input. The CLI turns each into a one-line error."""

from __future__ import annotations


class PlacerError(Exception):
    """Base class of every error caused by user input (files, specs, arguments)."""


class GraphValidationError(PlacerError):
    """A job graph is malformed: cycle, bad cost, dangling edge, duplicate id, empty."""


class ClusterSpecError(PlacerError):
    """A cluster spec file is missing, unreadable or invalid."""


class WorkloadError(PlacerError):
    """A workload (beta distribution, arrival process, trace) is invalid."""


class PolicyError(PlacerError):
    """A policy name or policy file is invalid."""


def validation_message(exc) -> str:
    """The first error of a pydantic ``ValidationError`` as one line: ``field: message`` (no ``Value error,`` prefix)."""
    err = exc.errors()[0]
    where = ".".join(map(str, err["loc"]))  # empty for a check of the whole model
    message = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's ValueError
    return f"{where}: {message}" if where else message
