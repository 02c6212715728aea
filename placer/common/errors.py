"""Exceptions raised for bad user input. The CLI turns each into a one-line error."""

from __future__ import annotations


class PlacerError(Exception):
    """Base class of every error caused by user input (files, specs, arguments).

    Code raises the subclass of its domain (below, or beside the code: the service's, calibration's, Ray's); callers
    catch ``PlacerError`` (the CLI prints any as one line) or a subclass where they treat that domain apart."""


class GraphValidationError(PlacerError):
    """A job graph is malformed: cycle, bad cost, dangling edge, duplicate id, empty."""


class ClusterError(PlacerError):
    """A cluster or a device is described wrongly: a device type or precision the datasheets do not know, a cluster spec."""


class ClusterSpecError(ClusterError):
    """A cluster spec file is missing, unreadable or invalid."""


class WorkloadError(PlacerError):
    """A workload (beta distribution, arrival process, trace) is invalid."""


class PolicyError(PlacerError):
    """A policy name or policy file is invalid."""


class ResultsError(PlacerError):
    """An evaluation's results cannot be read, merged or summarised as asked: a per-job table missing or not the one its
    results.json records, evaluations that cannot be paired."""


class ConfigError(PlacerError):
    """A configuration is invalid: a training config's fields, or its environment's (:class:`EnvConfigError`)."""


class EnvConfigError(ConfigError):
    """The placement environment's configuration (:class:`placer.envs.config.EnvConfig`, a training config's ``[env]``) is invalid:
    a reward, baseline, adviser or setting that does not exist or does not fit the rest of it."""


class TrainingError(PlacerError):
    """A training run cannot start, resume or finish as asked: an output folder in the way, a checkpoint or initial
    policy of another config, a device that is not there, a promotion target that cannot be written."""


class QueryError(PlacerError):
    """A placement query is malformed: a degree or device names the cluster does not have, a cluster state or a
    deadline that cannot be, options that exclude each other."""


class GraphImportError(GraphValidationError):
    """A model or profile from another format cannot become a job graph (not a module, no export, no ops)."""


class CostModelError(PlacerError):
    """The cost model was asked for something it does not price: an unknown parallelism strategy."""


class OutputError(PlacerError):
    """A result cannot be written where asked: the target is a folder, its folder is missing, permission is denied."""


class MissingDependencyError(PlacerError):
    """An optional dependency this command needs is not installed; the message names the pip extra."""


class BoundError(PlacerError):
    """The clairvoyant bound cannot be computed: no jobs, or the solver found no schedule in its time limit."""


class UsageError(PlacerError):
    """A command was called with arguments that do not fit together (the message says which to give)."""


class RayClusterError(PlacerError):
    """Ray is missing or unreachable, or its nodes do not match the cluster file or the service."""


def validation_message(exc) -> str:
    """The first error of a pydantic ``ValidationError`` as one line: ``field: message`` (no ``Value error,`` prefix)."""
    err = exc.errors()[0]
    where = ".".join(map(str, err["loc"]))  # empty for a check of the whole model
    message = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's ValueError
    return f"{where}: {message}" if where else message
