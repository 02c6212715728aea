"""The least-squares problem of a calibration (:mod:`placer.calibration.fit`): the rows, the constants they inform,
predictions at any values of those constants, the checks that refuse implausible rows, the MAP fit and its
cross-validation folds."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from scipy.optimize import least_squares

from placer.calibration.constants import FASTEST_AT_HIGH, parameters
from placer.calibration.measurements import CalibrationError, Row
from placer.calibration.priors import NOISE, prior_loss
from placer.cluster.topology import Cluster, JobCalibration, Overheads, parse_cluster_spec
from placer.cost.collectives import Fabric
from placer.cost.data_parallel import BUCKET_BYTES
from placer.cost.model import CostModel, Strategy

CONTRADICTION_RATIO = 1.5
PEAK_SLACK = 0.8  # a row may be this much faster than the optimistic bound (measurement noise)
LOO_MAX_ROWS = 30
FOLDS = 10
_GRAPH_SIDE: dict[str, CostModel] = {}  # one model whose graph-side caches (profiles, stages: any cluster's) every fit shares
SLOW_START = 0.1  # fit_map's second start: the inter-server efficiency at this fraction of its nominal
DENSE_JACOBIAN_ROWS = 40  # up to this many rows the dense Jacobian is cheap, and its finite differences are the more accurate
# A sparse Jacobian makes least_squares solve with lsmr in a 2-d subspace, which fails on one variable (IndexError, scipy 1.17):
# one free constant always gets the dense one (a single column: as cheap).


class Problem:
    """The rows, the constants they inform, and predictions at any values of those constants."""

    def __init__(
        self, cluster: Cluster, rows: list[Row], *, checked: bool = True, evidence: frozenset[str] = frozenset(), shared: bool = True
    ) -> None:
        """``checked``: refuse too few rows and implausible ones now (False: only set up); ``evidence``: links whose
        latency the rows were shown to prefer (:func:`placer.calibration.fit._latency_evidence`): a wide prior inside the physical range."""
        self.base_cluster, self.rows, self.evidence = cluster, rows, evidence
        side = _GRAPH_SIDE.get("model") or _GRAPH_SIDE.setdefault("model", CostModel(cluster, max_graphs=64, max_graph_bytes=2**26))
        self.base = side.rebased(cluster)
        self.shapes = [self.base.shape(r.devices) for r in rows]
        self.types = [cluster.device_type[self.base.slowest(r.devices)] for r in rows]
        self.log_measured = np.log([r.step_time_s for r in rows])
        self.shared = shared
        self.params, self.kept, self.unproven = parameters(cluster, rows, self.shapes, self.types, evidence, self._spread)
        if not shared:
            self.kept |= {p.path: "held: a job's own constants only" for p in self.params if p.keys[0] != "jobs"}
            self.params = [p for p in self.params if p.keys[0] == "jobs"]
            self.unproven = []
        self.x0 = np.array([p.to_x(p.nominal) for p in self.params])
        if not checked:
            return
        if len(rows) < len(self.params) + 1:
            names = ", ".join(p.path for p in self.params)
            raise CalibrationError(
                f"{len(rows)} measurement(s) cannot fit {len(self.params)} constant(s) ({names}): give at least {len(self.params) + 1}"
            )
        self.check_contradictions()
        self.splits = self._pick_splits(self.x0)

    def _spread(self, rows: list[Row]) -> float:
        """Largest over smallest all-reduce message (a DDP bucket: gradients up to 25 MB) among ``rows``' graphs (1 if none)."""
        sizes = []
        for row in rows:
            profile = self.base.profile(row.graph, None, 1.0)
            grads = float(profile.param_bytes.sum()) * profile.grad_bytes_per_param_byte
            if grads > 0:
                sizes.append(grads / math.ceil(grads / BUCKET_BYTES))
        return max(sizes) / min(sizes) if sizes else 1.0

    # -- predictions ------------------------------------------------------------------
    def values(self, x: np.ndarray) -> dict[tuple[str, ...], float]:
        return {p.keys: p.from_x(v) for p, v in zip(self.params, x, strict=True)}

    def model_at(self, x: np.ndarray) -> tuple[CostModel, dict[str, float]]:
        v, spec = self.values(x), self.base_cluster.spec
        links = spec.links
        intra, inter = links.intra_server, links.inter_server
        fabric = Fabric(
            v.get(("links", "intra_server", "bandwidth_Bps"), intra.bandwidth_Bps)
            * v.get(("links", "intra_server", "efficiency"), intra.delivered),
            v.get(("links", "intra_server", "latency_s"), intra.latency_s),
            v.get(("links", "inter_server", "bandwidth_Bps"), inter.bandwidth_Bps)
            * v.get(("links", "inter_server", "efficiency"), inter.delivered),
            inter.nics_per_server,
            v.get(("links", "inter_server", "latency_s"), inter.latency_s),
            v.get(("communication", "overlap"), spec.comm.overlap),
            spec.detailed_comm,
        )
        overheads = Overheads(iteration_s=spec.overheads.iteration_s, sync_s=v.get(("overheads", "sync_s"), spec.overheads.sync_s))
        scales = {t: v.get(("device_types", t, "compute_scale"), d.compute_scale) for t, d in spec.device_types.items()}
        jobs = dict(spec.jobs)
        for name in {keys[1] for keys in v if keys[0] == "jobs"}:
            own = spec.jobs.get(name, JobCalibration())
            jobs[name] = JobCalibration(
                compute_scale=v.get(("jobs", name, "compute_scale"), own.compute_scale),
                iteration_s=v.get(("jobs", name, "iteration_s"), own.iteration_s),
            )
        return self.base.retuned(fabric, overheads, jobs), scales

    def predicted(self, x: np.ndarray, rows: list[int] | None = None, splits: list[Strategy | None] | None = None) -> np.ndarray:
        model, scales = self.model_at(x)
        indices = range(len(self.rows)) if rows is None else rows
        out = []
        for i in indices:
            shape = self.shapes[i]._replace(compute_scale=scales[self.types[i]])
            split = (splits or self.splits)[i]
            row = self.rows[i]
            p = model.predict(row.graph, shape, row.strategy) if split is None else model.predict_split(row.graph, shape, split)
            out.append(p.iteration_s)
        return np.asarray(out)

    def errors(self, x: np.ndarray) -> np.ndarray:
        return self.predicted(x) / np.exp(self.log_measured) - 1

    def _pick_splits(self, x: np.ndarray) -> list[Strategy]:
        model, scales = self.model_at(x)
        splits = []
        for row, shape, kind in zip(self.rows, self.shapes, self.types, strict=True):
            p = model.predict(row.graph, shape._replace(compute_scale=scales[kind]), row.strategy)
            if p.strategy is None or not math.isfinite(p.iteration_s):
                raise CalibrationError(f"{row.label}: no way to split {row.graph.name} over {len(row.devices)} device(s) in the cost model")
            splits.append(p.strategy)
        return splits

    # -- checks -----------------------------------------------------------------------
    def check_contradictions(self) -> None:
        seen: dict[tuple, int] = {}
        for i, (row, shape) in enumerate(zip(self.rows, self.shapes, strict=True)):
            key = (row.graph.key, row.graph.batch_size, row.graph.precision, row.strategy, shape)
            j = seen.setdefault(key, i)
            a, b = self.rows[j].step_time_s, row.step_time_s
            if max(a, b) > CONTRADICTION_RATIO * min(a, b):
                raise CalibrationError(
                    f"{self.rows[j].label} and {row.label} measure the same job on the same placement shape "
                    f"{max(a, b) / min(a, b):.1f}x apart ({a:.4g} s, {b:.4g} s): drop the wrong one"
                )
        fastest = np.array([p.bounds[1] if p.keys[-1] in FASTEST_AT_HIGH else p.bounds[0] for p in self.params])
        optimistic = self.predicted(fastest, splits=[None] * len(self.rows))
        for row, bound in zip(self.rows, optimistic, strict=True):
            if row.step_time_s < PEAK_SLACK * bound:
                raise CalibrationError(
                    f"{row.label}: {row.step_time_s:.4g} s is faster than {row.graph.name} at batch {row.graph.batch_size} "
                    f"can run on these devices at their datasheet peaks ({bound:.4g} s): is the device type or the batch size wrong?"
                )

    # -- fitting ----------------------------------------------------------------------
    def fit(self, x0: np.ndarray, rows: list[int] | None = None) -> np.ndarray:
        """MAP constants (module docstring) on all rows, or refitted on ``rows`` only (cross-validation: splits kept)."""
        self.jacobian = np.zeros((len(self.rows), len(self.params)))
        if not self.params:
            return x0
        keep = np.arange(len(self.rows)) if rows is None else np.asarray(rows)
        low, high = (np.array(b) for b in zip(*(p.bounds for p in self.params), strict=True))
        prior_x, weight = self.x0, NOISE / np.array([p.sigma for p in self.params])
        x = np.clip(x0, low, high)
        for _ in range(3):
            splits = self.splits

            def residuals(x: np.ndarray, splits=splits) -> np.ndarray:
                data = np.log(self.predicted(x, keep.tolist(), splits)) - self.log_measured[keep]
                return np.concatenate([data, weight * (x - prior_x)])

            result = least_squares(
                residuals,
                x,
                bounds=(low, high),
                loss=prior_loss(len(keep)),
                f_scale=NOISE,
                diff_step=1e-4,
                jac_sparsity=self._sparsity(keep) if len(keep) > DENSE_JACOBIAN_ROWS and len(self.params) > 1 else None,
                xtol=1e-8 if rows is None else 1e-6,
                ftol=1e-8 if rows is None else 1e-6,
                max_nfev=200 if rows is None else 30,
            )
            x = result.x
            if rows is not None:
                return x
            jac = result.jac.toarray() if hasattr(result.jac, "toarray") else np.asarray(result.jac)
            self.jacobian = jac[: len(keep)]
            repicked = self._pick_splits(x)
            if repicked == self.splits:
                break
            self.splits = repicked
        return x

    def fit_map(self) -> np.ndarray:
        """:meth:`fit` from the nominal constants, from the network's efficiency at :data:`SLOW_START` of it, and from both links'; the
        start whose fit has the lower posterior cost. At line rate a fully overlapped all-reduce hides behind the backward
        pass, where the step time barely moves with the efficiency: a fit started there explains a slow network otherwise."""
        starts = [self.x0]
        for links in (("inter_server",), ("inter_server", "intra_server")):
            slow = [i for i, p in enumerate(self.params) if p.keys[-1] == "efficiency" and p.keys[1] in links]
            start = self.x0.copy()
            start[slow] = [max(self.x0[i] + math.log(SLOW_START), self.params[i].bounds[0]) for i in slow]
            if slow and not any(np.array_equal(start, other) for other in starts):
                starts.append(start)
        if len(starts) == 1:  # no efficiency to start low (a file that does not opt in): one start, as before
            return self.fit(self.x0)
        splits, best = self.splits, None
        for start in starts:
            self.splits = splits
            x = self.fit(start)
            cost = self.data_cost(x) + float(np.sum(((x - self.x0) / np.array([p.sigma for p in self.params])) ** 2))
            if best is None or cost < best[0]:
                best = (cost, x, self.jacobian, self.splits)
        assert best is not None
        _, x, self.jacobian, self.splits = best
        return x

    def data_cost(self, x: np.ndarray) -> float:
        """Sum of the soft-L1 data loss at ``x`` in units of :data:`NOISE` squared (about the chi-square of the rows)."""
        z = ((np.log(self.predicted(x)) - self.log_measured) / NOISE) ** 2
        return float(np.sum(2 * (np.sqrt(1 + z) - 1)))

    def _sparsity(self, rows: np.ndarray) -> np.ndarray:
        """(rows + params, params) bool: a job's own constants move only its rows; a prior only its constant."""
        names = [self.rows[i].job_name for i in rows]
        data = np.array([[p.keys[0] != "jobs" or p.keys[1] == name for p in self.params] for name in names], dtype=bool)
        return np.vstack([data, np.eye(len(self.params), dtype=bool)])

    def folds(self) -> tuple[list[list[int]], str]:
        """Held-out row groups: one placement shape each (at most :data:`FOLDS`, shapes dealt round), or rows with one shape only."""
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, (shape, kind) in enumerate(zip(self.shapes, self.types, strict=True)):
            groups[(shape.counts, kind)].append(i)
        n = len(self.rows)
        if len(groups) >= 2:
            shapes = list(groups.values())
            if len(shapes) <= FOLDS:
                return shapes, f"leave one placement shape out ({len(shapes)} shapes, refitted each time)"
            merged = [sum(shapes[k::FOLDS], []) for k in range(FOLDS)]
            return merged, f"{FOLDS} folds of whole placement shapes ({len(shapes)} shapes, refitted each time)"
        if n <= LOO_MAX_ROWS:
            return [[i] for i in range(n)], "leave one row out (one placement shape only: no extrapolation measured)"
        return [list(range(k, n, FOLDS)) for k in range(FOLDS)], f"{FOLDS}-fold (one placement shape only: no extrapolation measured)"

    def cross_validate(self, x: np.ndarray) -> tuple[np.ndarray, str]:
        """Per row, predicted / measured - 1 from a fit that did not see the row's fold (:meth:`folds`); always refitted."""
        folds, method = self.folds()
        out = np.empty(len(self.rows))
        jacobian = self.jacobian
        for held in folds:
            train = sorted(set(range(len(self.rows))) - set(held))
            x_fold = self.fit(x, train) if train else self.x0
            out[held] = self.predicted(x_fold, held) / np.exp(self.log_measured[held]) - 1
        self.jacobian = jacobian
        return out, method

    def cluster_with(self, values: dict[tuple[str, ...], float], calibrated: dict | None = None) -> Cluster:
        data = self.base_cluster.spec.model_dump()
        data["calibrated"] = calibrated
        for keys, value in values.items():
            node = data
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = value
        data["name"] = data["name"] if data["name"].endswith("-calibrated") else f"{data['name']}-calibrated"
        return Cluster(parse_cluster_spec(data, source="calibrated cluster"))
