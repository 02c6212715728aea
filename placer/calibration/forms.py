"""Which model form a calibration keeps: the cluster file's own, or the communication terms, chosen by cross-validation.

A cluster file written from nominal specs usually sets neither a link ``kind`` nor a ``[communication]`` table, so it
is priced without the communication terms (docs/clusters.md): every link at line rate, gradient all-reduces hidden
behind the backward pass. No constant of that form can express a network that delivers a fraction of its line rate
and a step that waits for it (a 2x cross-server slowdown). So where the rows span servers,
:func:`placer.calibration.fit.fit_rows` fits both forms:

- the file's own (as before: the links' bandwidths, latencies, overheads and compute rates);
- the file opted in (:func:`opted_in`: a ``[communication]`` table added; each link's efficiency and the overlap fitted,
  from the link kind's default where the file names one, else from 1, the line rate);

and keeps the opted-in form only where its leave-one-placement-shape-out cross-validated median error is at most
:data:`FORM_MARGIN` of the file form's (a clear margin: a form that only fits the calibration rows more closely does
not win). The calibrated cluster then carries the opt-in keys (``[communication] overlap``, the links' ``efficiency``),
so predictions follow the form kept; its report says which form was kept and both cross-validated errors.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placer.calibration.result import Calibration
from placer.cluster.topology import Cluster, parse_cluster_spec

FORM_MARGIN = 0.8  # the opted-in form is kept when its cross-validated median error is at most this fraction of the file form's


def needs_selection(cluster: Cluster, fit: Calibration) -> bool:
    """Whether a fit of ``cluster`` should be weighed against the opted-in form: the file does not opt in, some row spans
    servers, and the fit was cross-validated over two or more placement shapes."""
    return not cluster.spec.detailed_comm and fit.max_servers > 1 and len(fit.shapes) >= 2 and bool(np.isfinite(fit.cv_errors).any())


def opted_in(cluster: Cluster) -> Cluster:
    """``cluster`` opted into the communication terms: an empty ``[communication]`` table (overlap 1 until fitted)."""
    data = cluster.spec.model_dump()
    data["communication"] = data.get("communication") or {}
    return Cluster(parse_cluster_spec(data, source=f"{cluster.name} with the communication terms"))


def select(own: Calibration, opted: Calibration) -> Calibration:
    """``opted`` when its cross-validated median error is at most :data:`FORM_MARGIN` of ``own``'s, else ``own``; the report
    (its notes) says which and why."""
    a, b = _median(own.cv_errors), _median(opted.cv_errors)
    both = f"cross-validated median error {b:.1%} with the communication terms, {a:.1%} in the file's form"
    if b <= FORM_MARGIN * a:
        note = f"model form: the communication terms kept (a communication table added; links' efficiency and overlap fitted): {both}"
        return _with_note(opted, note)
    return _with_note(own, f"model form: the file's own kept (the communication terms must beat it by {1 - FORM_MARGIN:.0%}): {both}")


def _with_note(fit: Calibration, note: str) -> Calibration:
    return replace(fit, notes=(note, *fit.notes))


def _median(errors: np.ndarray) -> float:
    finite = np.abs(errors[np.isfinite(errors)])
    return float(np.median(finite)) if len(finite) else float("inf")
