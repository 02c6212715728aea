"""Fit a cluster's cost-model constants to measured step times.

What nominal specs get wrong, and what is fitted, each only where the rows inform it
(:mod:`placer.calibration.constants`): links' efficiencies (delivered fraction of line rate) and
latencies, the gradient all-reduce's overlap with the backward pass, device types' and jobs'
compute rates, per-step overheads.

Bounds keep the fit physical: an efficiency at most 1 (the cluster file's line rate; at least
1/1000), an overlap in [0, 1], a latency within its link type's physical range unless the rows prove more
(:mod:`placer.calibration.priors`), a ``compute_scale`` that lifts no sustained rate above the
device's datasheet peak, overheads in [0, 60 s].

The fit is MAP in log space (:mod:`placer.calibration.priors`: a soft-L1 loss with a 5 % scale on
``log(predicted) - log(measured)`` plus a Gaussian prior around each nominal constant, bounded,
``scipy.optimize.least_squares``), started at the nominal constants. Each row is predicted with
the split (``dp x tp x pp``) the cost model picks for it; splits are re-picked at the fitted
constants and the fit repeated until they no longer change (three rounds at most). The report
says which constants the rows identified and which came from the prior, and flags any on a
bound. The cross-validated error measures extrapolation: each placement shape (devices per
server, device type) is left out in turn, the constants refitted on the other shapes' rows, and
the left-out rows predicted (with one shape only: each row in turn, up to 30 rows, else 10 folds).

Refused, in one line: fewer rows than fitted constants plus one; two rows of the same job on
the same placement shape more than 1.5x apart; a row faster than its devices' datasheet peaks
allow (a wrong device type or batch size).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from placer.calibration.forms import needs_selection, opted_in, select
from placer.calibration.measurements import Row, read_measurements
from placer.calibration.priors import identified
from placer.calibration.problem import Problem
from placer.calibration.result import Calibration
from placer.cluster.topology import Cluster, load_cluster

EVIDENCE = 3.84  # chi-square, 1 degree of freedom, 5 %


def calibrate(cluster: Cluster | str | Path, measurements: str | Path | Iterable[Mapping]) -> Cluster:
    """``cluster`` (a Cluster, preset name or TOML path) with constants fitted to ``measurements`` (module docstring)."""
    return fit_calibration(cluster, measurements).cluster


def fit_calibration(
    cluster: Cluster | str | Path, measurements: str | Path | Iterable[Mapping], *, cross_validate: bool = True
) -> Calibration:
    """The full :class:`Calibration` (the CLI writes its report into the TOML it saves)."""
    base_cluster = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    rows = read_measurements(measurements, base_cluster)
    source = str(measurements) if isinstance(measurements, str | Path) else "measurements"
    return fit_rows(base_cluster, rows, source=source, cross_validate=cross_validate)


def fit_rows(
    cluster: Cluster,
    rows: list[Row],
    *,
    source: str = "measurements",
    cross_validate: bool = True,
    shared: bool = True,
    select_form: bool = True,
) -> Calibration:
    """:func:`fit_calibration` on rows already resolved against ``cluster``; ``shared=False`` fits each job's own
    constants only (``jobs.NAME.*``), the cluster's links, overheads and device rates held as given.

    ``select_form``: for a file not opted into the communication terms, with rows that span servers, also fit the
    opted-in form and keep the one that cross-validates clearly better (:mod:`placer.calibration.forms`)."""
    chosen = _fit_form(cluster, rows, source=source, cross_validate=cross_validate, shared=shared)
    if select_form and shared and cross_validate and needs_selection(cluster, chosen):
        opted = _fit_form(opted_in(cluster), rows, source=source, cross_validate=True, shared=True)
        chosen = select(chosen, opted)
    return chosen


def _fit_form(cluster: Cluster, rows: list[Row], *, source: str, cross_validate: bool, shared: bool) -> Calibration:
    """:func:`fit_rows` in the cluster file's own model form (no form selection)."""
    problem = Problem(cluster, rows, shared=shared)
    x = problem.fit_map()
    problem, x, notes = _latency_evidence(problem, x)
    errors = problem.errors(x)
    cv_errors, method = problem.cross_validate(x) if cross_validate else (np.full(len(rows), np.nan), "none")
    if (
        shared
        and cross_validate
        and _median(cv_errors) > _median(problem.errors(problem.x0))
        and any(p.keys[0] != "jobs" for p in problem.params)
    ):
        held = _fit_form(cluster, rows, source=source, cross_validate=True, shared=False)
        if _median(held.cv_errors) < _median(cv_errors):  # refitting the cluster's constants would predict left-out shapes worse
            why = f"{_median(cv_errors):.1%} cross-validated with them refitted, {_median(held.cv_errors):.1%} held"
            return replace(held, notes=(*held.notes, f"the cluster's shared constants held at the file's values: {why}"))
    values = {p.keys: float(p.from_x(v)) for p, v in zip(problem.params, x, strict=True)}
    sources = identified(problem.params, problem.jacobian, x)
    outward = -problem.jacobian.T @ (np.log(problem.predicted(x)) - problem.log_measured)  # where the rows pull each constant
    bounds = {  # only where the rows pull past the bound (a line rate the prior left alone is not news)
        p.path: side
        for p, pull in zip(problem.params, outward, strict=True)
        if (side := p.bound_hit(values[p.keys])) is not None and (pull > 1e-9 if side == "upper" else pull < -1e-9)
    }
    finite = np.abs(cv_errors[np.isfinite(cv_errors)])
    calibrated = {
        "rows": len(rows),
        "max_servers": max(s.servers for s in problem.shapes),
        "max_devices_per_server": max(s.max_per_server for s in problem.shapes),
    } | ({"cv_median": float(np.median(finite)), "cv_p90": float(np.percentile(finite, 90))} if len(finite) else {})
    return Calibration(
        cluster=problem.cluster_with(values, calibrated),
        source=source,
        rows=len(rows),
        fitted={p.path: (p.nominal, values[p.keys]) for p in problem.params},
        kept=problem.kept,
        errors=errors,
        cv_errors=cv_errors,
        cv_method=method,
        nominal_errors=problem.errors(problem.x0),
        identified=sources,
        at_bound=bounds,
        shapes=tuple(sorted({s.counts for s in problem.shapes})),
        notes=notes,
    )


def _latency_evidence(problem: Problem, x: np.ndarray) -> tuple[Problem, np.ndarray, tuple[str, ...]]:
    """For each link latency the tight prior held: refit with a wide prior (bounds kept); keep that fit when its
    data cost falls by more than :data:`EVIDENCE` (a likelihood-ratio test at 5 %, one constant): the rows prefer it.

    Only where some row puts more than 2 servers (inter-server) or more than 2 devices on one server
    (intra-server) on the link's ring: at 2 the latency (``2 L`` per message) and bandwidth terms differ
    only by message size, which says nothing of how the cost grows with the ring, and a latency fitted
    there grows the most when extrapolated (15x from 2 servers to 16)."""
    notes = []
    longest = {"inter_server": max(s.servers for s in problem.shapes), "intra_server": max(s.max_per_server for s in problem.shapes)}
    for link in [name for name in problem.unproven if longest[name] > 2]:
        alt = Problem(problem.base_cluster, problem.rows, evidence=problem.evidence | {link}, shared=problem.shared)
        x_alt = alt.fit_map()
        gain = problem.data_cost(x) - alt.data_cost(x_alt)
        if gain > EVIDENCE:
            problem, x = alt, x_alt
            why = f"the rows prefer a latency explanation (likelihood ratio {gain:.1f} > {EVIDENCE}): wide prior"
            notes.append(f"links.{link}.latency_s: {why}")
    return problem, x, tuple(notes)


def _median(errors: np.ndarray) -> float:
    return float(np.median(np.abs(errors)))


def constants_needed(cluster: Cluster, rows: list[Row], *, shared: bool = True) -> int:
    """How many constants ``rows`` would fit (a fit needs one row more)."""
    return len(Problem(cluster, rows, checked=False, shared=shared).params)


def check_plausible(cluster: Cluster, rows: list[Row]) -> None:
    """The fit's refusals that need no fit: rows that contradict each other, a row faster than the devices' peaks allow."""
    Problem(cluster, rows, checked=False).check_contradictions()
