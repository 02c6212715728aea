"""Policy names -> heuristics: the parser behind ``placer evaluate --policies`` for every rule in
:mod:`placer.baselines.heuristics` and the planners of :mod:`placer.baselines.lookahead`."""

from __future__ import annotations

from placer.baselines.heuristics import AutoAdmission, BestLean, Fixed, Heuristic, Lean, ParaMax, ParaMin, RandomDegree
from placer.baselines.lookahead import Hindsight, Lookahead
from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import PolicyError
from placer.sim.options import DEFAULT_MAX_DEGREE


def make_heuristic(spec: str, *, max_degree: int = DEFAULT_MAX_DEGREE) -> Heuristic:
    """Build a heuristic from its name, e.g. ``para_min``, ``fixed:8+best_fit``, ``lean:cap=8``."""
    base, _, rule = spec.partition("+")
    rule = rule or "first_fit"
    if rule not in PLACEMENT_RULES:
        raise PolicyError(f"unknown placement rule {rule!r} in {spec!r} (rules: {', '.join(PLACEMENT_RULES)})")
    kind, _, arg = base.partition(":")
    common = {"rule": rule, "max_degree": max_degree, "name": spec}
    if kind == "para_max" and not arg:
        return ParaMax(**common)
    if kind == "para_min" and not arg:
        return ParaMin(**common)
    if kind == "random" and not arg:
        return RandomDegree(**common)
    if kind == "fixed" and arg.isdigit() and 1 <= int(arg) <= max_degree:
        return Fixed(**common, degree=int(arg))
    if kind == "lean" and (lean := _lean_options(arg)) is not None:
        if lean["admit"] == "best":
            return BestLean(**common, **(lean | {"admit": None}))
        return Lean(**common, **lean)
    if kind == "lookahead" and (planner := _lookahead_options(arg)) is not None:
        return Lookahead(**common, **planner)
    if kind == "hindsight" and (planner := _lookahead_options(arg)) is not None and "futures" not in planner:
        return Hindsight(**common, **planner)
    raise PolicyError(
        f"unknown policy {spec!r}: use para_max, para_min, fixed:K (1 <= K <= {max_degree}), random, lean, "
        "lean:cap=K:admit=Q:free=F (Q: a quantile, auto or best), lookahead:k=K:h=H:m=M or hindsight:h=H:m=M, "
        "optionally +first_fit, +best_fit or +spread"
    )


def _key_values(arg: str, kinds: dict[str, type]) -> dict | None:
    """``a=1:b=0.5`` -> {"a": 1, "b": 0.5} for the keys in ``kinds``; None if malformed."""
    out: dict = {}
    for part in filter(None, arg.split(":")):
        key, eq, value = part.partition("=")
        if not eq or key not in kinds or key in out:
            return None
        try:
            out[key] = kinds[key](value)
        except ValueError:
            return None
    return out


def _lean_options(arg: str, online: bool = False) -> dict | None:
    """``cap``, ``admit`` (a quantile, ``auto``, or ``best`` unless ``online`` only), ``free``."""
    values = _key_values(arg, {"cap": int, "admit": _admission, "free": float})
    if values is None or values.get("cap", 1) < 1 or not 0 <= values.get("free", 0.5) <= 1:
        return None
    admit = values.get("admit")
    if isinstance(admit, float) and not 0 < admit <= 1 or (online and admit == "best"):
        return None
    return {"cap": values.get("cap"), "admit": admit, "admit_free": values.get("free", 0.5)}


def _admission(text: str) -> float | AutoAdmission | str:
    if text == "auto":
        return AutoAdmission()
    if text == "best":
        return text
    return float(text)


def _lookahead_options(arg: str) -> dict | None:
    """``k``, ``h``, ``m`` (the planner's) and ``admit``, ``free`` (its lean's)."""
    planner = {k: v for k, v in (p.partition("=")[::2] for p in filter(None, arg.split(":"))) if k in ("k", "h", "m")}
    lean = _lean_options(":".join(p for p in arg.split(":") if p.partition("=")[0] not in ("k", "h", "m")), online=True)
    values = _key_values(":".join(f"{k}={v}" for k, v in planner.items()), {"k": int, "h": int, "m": float})
    if lean is None or values is None or values.get("k", 1) < 1 or values.get("h", 1) < 1 or values.get("m", 0) < 0:
        return None
    renamed = {"k": "futures", "h": "horizon", "m": "margin"}
    return {renamed[k]: v for k, v in values.items()} | lean
