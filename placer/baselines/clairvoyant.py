"""The clairvoyant bound of a loss system: the fewest blocked jobs with the whole future known.

    placer bound --cluster pacml --beta-dist A,B,C,D --seeds 5 --jobs 1000 --time-limit 60

A mixed-integer program over one job stream (needs the ``bound`` extra: SciPy's HiGHS):

- ``x[j, d]`` = 1 when job ``j`` starts at its arrival on ``d`` devices, for the degrees ``d``
  whose fastest placement on the idle cluster fits in memory and meets the deadline;
- each job at most one degree; at each arrival instant ``t`` the jobs running (arrived at or
  before ``t``, not yet finished) use at most the cluster's devices (the count of running jobs
  only rises at arrivals, so checking those instants suffices);
- maximise the accepted jobs.

On a cluster of identical single-device servers (``pacml``) every placement of a degree is the
same, so the program is exactly the best schedule in hindsight of PAC-ML's loss system. On
multi-device servers it ignores fragmentation and gives each degree its fastest placement: a
relaxation, so its value is still a lower bound on any policy's blocking. With a time limit,
HiGHS returns its best schedule and its dual bound: ``blocking`` is what the best schedule found
blocks, ``lower_bound`` what no schedule can beat.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from placer.common.errors import BoundError, MissingDependencyError
from placer.cost import CostModel
from placer.sim.fastest import idle_iteration_s
from placer.sim.types import meets_deadline
from placer.workloads.generator import JobSpec


@dataclass(frozen=True)
class ClairvoyantResult:
    jobs: int
    blocking_rate: float  # of the best schedule found
    lower_bound: float  # no schedule blocks fewer (HiGHS's dual bound)
    optimal: bool  # solved to optimality (then the two agree)
    degrees: dict[int, int]  # accepted jobs per degree in the best schedule


def degree_times(cost: CostModel, spec: JobSpec, max_degree: int) -> dict[int, float]:
    """{degree: the JCT (s) of its fastest placement on the idle cluster (:func:`~placer.sim.simulator.fastest_idle_placement`)},
    degrees that fit in memory."""
    return {degree: seconds * spec.iterations for degree, seconds in idle_iteration_s(cost, spec.graph, max_degree).items()}


def clairvoyant(
    cost: CostModel, jobs: Iterable[JobSpec], *, max_degree: int = 16, time_limit_s: float = 60.0, verbose: bool = False
) -> ClairvoyantResult:
    """Solve the clairvoyant schedule of ``jobs`` (a loss system) on ``cost``'s cluster; see the module docstring.
    ``verbose``: the solver prints its log (quiet otherwise; ``placer bound`` also silences what HiGHS prints regardless)."""
    try:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_array
    except ImportError as error:
        raise MissingDependencyError("the clairvoyant bound needs SciPy: pip install 'placer[bound]'") from error
    specs = list(jobs)
    if not specs:
        raise BoundError("no jobs to schedule")
    variables: list[tuple[int, int, float]] = []  # (job, degree, finish time)
    for j, spec in enumerate(specs):
        deadline = spec.beta * cost.sequential_jct_s(spec.graph, spec.iterations)
        for degree, jct in degree_times(cost, spec, max_degree).items():
            if meets_deadline(jct, deadline):
                variables.append((j, degree, spec.arrival_s + jct))
    if not variables:
        return ClairvoyantResult(len(specs), 1.0, 1.0, True, {})
    job_of = np.array([v[0] for v in variables])
    degree_of = np.array([v[1] for v in variables], dtype=float)
    finish = np.array([v[2] for v in variables])
    arrivals = np.array([s.arrival_s for s in specs])
    start = arrivals[job_of]
    rows, cols, vals = [job_of], [np.arange(len(variables))], [np.ones(len(variables))]  # one degree per job
    instants = np.unique(arrivals)
    # variable k runs at instant t when start_k <= t < finish_k: a range of the sorted instants
    first = np.searchsorted(instants, start, side="left")
    last = np.searchsorted(instants, finish, side="left")  # exclusive
    spans = last - first
    k = np.repeat(np.arange(len(variables)), spans)
    t = np.concatenate([np.arange(a, b) for a, b in zip(first, last, strict=True)]) if len(k) else np.array([], dtype=int)
    rows.append(len(specs) + t)
    cols.append(k)
    vals.append(degree_of[k])
    matrix = coo_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(len(specs) + len(instants), len(variables))
    ).tocsr()
    upper = np.concatenate([np.ones(len(specs)), np.full(len(instants), float(cost.cluster.num_devices))])
    result = milp(
        c=-np.ones(len(variables)),
        constraints=LinearConstraint(matrix, -np.inf, upper),
        integrality=np.ones(len(variables)),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit_s, "disp": verbose},
    )
    if result.x is None:
        raise BoundError(f"the clairvoyant program found no schedule in {time_limit_s:g} s ({result.message})")
    chosen = result.x > 0.5
    accepted = int(chosen.sum())
    best_possible = int(np.floor(-getattr(result, "mip_dual_bound", -accepted) + 1e-6))
    degrees = {int(d): int(n) for d, n in zip(*np.unique(degree_of[chosen].astype(int), return_counts=True), strict=True)}
    lower_bound = 1 - max(best_possible, accepted) / len(specs)
    return ClairvoyantResult(len(specs), 1 - accepted / len(specs), lower_bound, result.status == 0, degrees)


def summarize(results: Sequence[ClairvoyantResult]) -> dict[str, float]:
    """Mean blocking, mean lower bound and the share solved to optimality over ``results``."""
    return {
        "blocking_rate": float(np.mean([r.blocking_rate for r in results])),
        "lower_bound": float(np.mean([r.lower_bound for r in results])),
        "optimal": float(np.mean([r.optimal for r in results])),
    }
