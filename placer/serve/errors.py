"""What the service's state refuses, as domain errors: nothing here knows HTTP.

Each is a :class:`~placer.common.errors.PlacerError`; the HTTP layer maps each class to a status
in one table (:data:`placer.serve.http.ERROR_STATUS`). Any other ``PlacerError`` (a graph that
does not validate, an implausible step time) is bad input: 422. :class:`ReservationStateError` is
what the state file refuses when the service starts on it (``placer serve`` prints it as one line).
"""

from __future__ import annotations

from placer.common.errors import PlacerError


class ServiceError(PlacerError):
    """Base of the errors the service's state raises for a request it refuses."""


class InvalidRequestError(ServiceError):
    """A request body that does not validate. ``errors``: pydantic's error list (locations start
    with ``"body"``), or None when the message says it all (the graph document's first problem)."""

    def __init__(self, message: str, errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.errors = errors


class GraphTooLargeError(ServiceError):
    """A graph with more ops or edges than the service accepts (``max_graph_ops``, ``max_graph_edges``)."""


class GraphMemoryFullError(ServiceError):
    """A graph the service cannot keep: its graphs of running jobs and kept reports would pass the graph memory budget
    (``retry_after_s``: room comes back as jobs are released), or it alone is larger (``retry_after_s`` None)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UnknownGraphKeyError(ServiceError):
    """A request names a graph by a key this server does not keep: send the graph."""


class IdempotencyConflictError(ServiceError):
    """An idempotency key used before for a different request body."""


class UnknownJobError(ServiceError):
    """No running job has this id (and no lease of that id ran out recently)."""


class LeaseExpiredError(ServiceError):
    """The job's lease ran out and its devices were freed."""


class NoLeaseError(ServiceError):
    """A lease renewal without ``lease_s`` for a job that holds its devices without a lease."""


class JobGraphUnavailableError(ServiceError):
    """A step time reported for a job placed before this server started: its graph is not known here."""


class ReportsTooFrequentError(ServiceError):
    """A client reports step times faster than the service takes them (``report_rate_per_s``, ``report_burst``)."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DevicesBusyError(ServiceError):
    """A resize onto devices another job holds, or to more devices than the job's own and the idle ones."""


class DoesNotFitError(ServiceError):
    """A resize onto devices the job's graph does not fit on (memory per device, or no split of the cost model applies)."""


class StateUnavailableError(ServiceError):
    """The state file cannot be written now (a full disk, an I/O error): nothing changed, retry later."""


class ReservationStateError(PlacerError):
    """The reservation state file cannot be used: in use by another server, made for another cluster, not readable and
    writable, not a reservation store, damaged, or holding a row that makes no sense (:mod:`placer.serve.reservations`)."""


class ServeSetupError(PlacerError):
    """``placer serve`` refuses its own options at start: a weak bearer token, a token file other users may read, a
    wildcard ``--allowed-host`` (:mod:`placer.serve.tokens`, :mod:`placer.cli.serve`)."""


class TenantsFileError(PlacerError):
    """The tenants file cannot be used: open to others, a weak or shared token, not TOML (:mod:`placer.serve.tenants`)."""
