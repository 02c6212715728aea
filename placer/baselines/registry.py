"""Policies by name: a :class:`~placer.baselines.specs.PolicySpec` becomes a heuristic, a planner or a
plug-in's policy (the learned policy, found by entry point: :mod:`placer.baselines.plugins`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placer.baselines.adaptive import Adaptive
from placer.baselines.best import BEST_CANDIDATES, ELASTIC_CANDIDATES, Best, ElasticBest
from placer.baselines.chronus import Chronus
from placer.baselines.elastic_lean import ElasticLean
from placer.baselines.elasticflow import ElasticFlow
from placer.baselines.heuristics import AutoAdmission, BestLean, Efficient, Fixed, Heuristic, Lean, ParaMax, ParaMin, RandomDegree, Switch
from placer.baselines.lookahead import Hindsight, Lookahead
from placer.baselines.plugins import plugin_factory
from placer.baselines.policy import Policy
from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec
from placer.cluster.placement import DEFAULT_RULE
from placer.cluster.topology import Cluster
from placer.common.errors import PolicyError
from placer.sim.options import DEFAULT_MAX_DEGREE

_SIMPLE = {"para_max": ParaMax, "para_min": ParaMin, "random": RandomDegree}
_PLANNER_FIELDS = {"k": "futures", "h": "horizon", "m": "margin"}


@dataclass(frozen=True)
class PolicyContext:
    """What building a policy may need besides its name: the cluster, the largest degree, a policy file."""

    cluster: Cluster
    max_degree: int = DEFAULT_MAX_DEGREE
    policy_file: Path | None = None


def make_policy(spec: str | PolicySpec, context: PolicyContext) -> Policy:
    """The policy named ``spec``: a heuristic or planner of :mod:`placer.baselines`, or a plug-in's."""
    spec = PolicySpec.parse(spec)
    if spec.kind in HEURISTIC_KINDS:
        return make_heuristic(spec, max_degree=context.max_degree)
    try:
        factory = plugin_factory(spec.kind)
    except ImportError as exc:
        raise PolicyError(f"policy {str(spec)!r} needs optional packages: {exc} (pip install -e '.[all]')") from None
    if factory is None:  # parse checked the name against the installed plug-ins
        raise PolicyError(f"policy {str(spec)!r}: its plug-in is no longer installed")
    return factory(spec, context)


def make_heuristic(spec: str | PolicySpec, *, max_degree: int = DEFAULT_MAX_DEGREE) -> Heuristic | Best | Adaptive | ElasticFlow | Chronus:
    """A heuristic or planner from its name, e.g. ``para_min``, ``fixed:8+best_fit``, ``lean:cap=8``, ``lean:admit=0.9@edf``."""
    spec = PolicySpec.parse(spec, plugins={})
    if spec.kind in ("best", "single-best", "adaptive"):
        if spec.rule is not None:
            raise PolicyError(f"unknown policy {str(spec)!r}: {spec.kind} picks its members' placement rules itself")
        names = [name for name in BEST_CANDIDATES if not name.startswith("fixed:") or int(name[6:]) <= max_degree]
        members = {name: make_heuristic(name, max_degree=max_degree) for name in names}
        return Adaptive(members, spec) if spec.kind == "adaptive" else Best(members, spec, pooled=spec.kind == "single-best")
    if spec.kind == "elastic-best":
        if spec.rule is not None:
            raise PolicyError(f"unknown policy {str(spec)!r}: elastic-best picks its members' placement rules itself")
        return ElasticBest({name: make_heuristic(name, max_degree=max_degree) for name in ELASTIC_CANDIDATES}, spec)
    if spec.kind == "elasticflow":
        if spec.rule is not None:
            raise PolicyError(f"unknown policy {str(spec)!r}: elasticflow places jobs on buddy blocks, not by a rule")
        return ElasticFlow(max_degree=max_degree, spec=spec)
    if spec.kind == "chronus":
        if spec.rule is not None:
            raise PolicyError(f"unknown policy {str(spec)!r}: chronus places its leases by consolidation, not by a rule")
        return Chronus(max_degree=max_degree, spec=spec)
    common: dict[str, Any] = {"rule": spec.rule or DEFAULT_RULE, "max_degree": max_degree, "spec": spec}
    options = spec.options
    if spec.kind in _SIMPLE:
        return _SIMPLE[spec.kind](**common)
    if spec.kind == "fixed":
        degree = spec.value
        if degree > max_degree:
            raise PolicyError(f"unknown policy {str(spec)!r}: fixed:K needs 1 <= K <= {max_degree}")
        return Fixed(**common, degree=degree)
    if spec.kind == "eff":
        return Efficient(**common, efficiency=spec.value)
    if spec.kind == "switch":
        return Switch(**common, quiet_free=spec.value)
    lean: dict[str, Any] = {"cap": options.get("cap"), "admit": _admission(options.get("admit")), "admit_free": options.get("free", 0.5)}
    if spec.kind == "elastic_lean":
        return ElasticLean(**common, **lean, shrink_all=options.get("shrink") == "all")
    if spec.kind == "lean":
        return BestLean(**common, **(lean | {"admit": None})) if options.get("admit") == "best" else Lean(**common, **lean)
    planner: dict[str, Any] = {_PLANNER_FIELDS[key]: value for key, value in options.items() if key in _PLANNER_FIELDS}
    return (Lookahead if spec.kind == "lookahead" else Hindsight)(**common, **lean, **planner)


def _admission(value: float | str | None) -> float | AutoAdmission | None:
    """``admit=``'s value as :meth:`PolicySpec.options` converted it: a quantile as it is, ``auto`` as the rule,
    ``best`` (tuned by the caller) and absent as None."""
    if value == "auto":
        return AutoAdmission()
    return None if value is None or isinstance(value, str) else value
