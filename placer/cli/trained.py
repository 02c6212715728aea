"""Whether an evaluation of the shipped policy runs in a regime it was trained on, read from its card.

The card (``data/policies/placer.card.json``) records the environment the policy was tuned for
(``teacher_table.tuned_for.env``): clusters, loads, the workload's size and queue, and ``settings``, each a set of
overrides drawn per episode (PAC-ML's loss setting: its cluster, no queue, fixed lengths). Each setting merged into
the base is one trained regime; an evaluation far from all of them says so in one line, with the options that fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec
from placer.common.shipped import DEFAULT_POLICY, default_policy_file
from placer.evaluate.config import EvaluationConfig
from placer.sim.queueing import QueueConfig

FIELDS = ("cluster", "size", "queue")  # what a regime fixes, each compared as its own kind of spec
OPTIONS = {"size": "--size", "queue": "--queue"}


def card_path(policy: Path | None = None) -> Path:
    """The card beside a policy file: ``NAME.pt`` -> ``NAME.card.json`` (default: the shipped policy's)."""
    policy = policy or default_policy_file()
    return policy.with_name(policy.stem + ".card.json")


def trained_regimes(card: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's trained regimes, each ``{"cluster": [...], "size": [...], "queue": [...], "loads": [...]}`` (lists of
    specs as written): the base environment with each of its ``settings`` merged in (the base alone without settings).
    A card without ``teacher_table.tuned_for.env`` has none (nothing to check against)."""
    env = card.get("teacher_table", {}).get("tuned_for", {}).get("env")
    if not isinstance(env, dict):
        return []
    workload = env.get("workload", {})
    base = {"cluster": env.get("clusters", []), "size": workload.get("size", []), "queue": workload.get("queue", [])}
    base["loads"] = env.get("loads", [])
    regimes = []
    for setting in env.get("settings") or [{}]:
        merged = dict(base)
        for key, field in (("clusters", "cluster"), ("size", "size"), ("queue", "queue"), ("loads", "loads")):
            if key in setting:
                merged[field] = setting[key]
        regimes.append({k: [v] if isinstance(v, str | int | float) else list(v) for k, v in merged.items()})
    return list({json.dumps(r, sort_keys=True): r for r in regimes}.values())


def evaluates_shipped(config: EvaluationConfig) -> bool:
    """Whether some evaluated policy is the shipped one: ``learned`` without ``--policy-file``, or ``learned:placer``."""
    for name in config.policies:
        spec = PolicySpec.parse(config.spec_of(name))
        if spec.kind in HEURISTIC_KINDS or spec.kind != "learned":
            continue
        if (spec.positional is None and not config.policy_file) or spec.positional == DEFAULT_POLICY:
            return True
    return False


def _same(field: str, given: str, trained: list[str]) -> bool:
    if field == "queue":
        return QueueConfig.parse(given) in [QueueConfig.parse(t) for t in trained]
    return given in trained


def mismatches(config: EvaluationConfig, regime: dict[str, Any]) -> list[str]:
    """The fields of ``config`` outside ``regime`` (a replayed trace brings its own lengths and loads: those unchecked)."""
    given = {"cluster": config.cluster, "size": config.workload.size[0], "queue": config.workload.queue[0]}
    fields = ["cluster", "queue"] if config.trace else list(FIELDS)
    off = [f for f in fields if not _same(f, given[f], regime[f])]
    loads = regime.get("loads") or []
    if not config.trace and loads and any(not min(loads) <= load <= max(loads) for load in config.load_values):
        off.append("load")
    return off


def outside_training(config: EvaluationConfig, card_file: Path | None = None) -> str | None:
    """One line when ``config`` evaluates the shipped policy outside every regime its card says it was trained on: the
    nearest regime's fields it differs in and the options that would match it; None when inside one, when the shipped
    policy is not evaluated, or when there is no readable card."""
    if not evaluates_shipped(config):
        return None
    path = card_file or card_path()
    try:
        regimes = trained_regimes(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
    if not regimes:
        return None
    # the nearest regime: one on the evaluated cluster first (the cluster is the user's; the options fit the rest)
    near = min(regimes, key=lambda r: ("cluster" in mismatches(config, r), len(mismatches(config, r))))
    off = mismatches(config, near)
    if not off:
        return None
    given = {"cluster": config.cluster, "size": config.workload.size[0], "queue": config.workload.queue[0]}
    loads = ", ".join(map(str, config.load_values))
    what = ", ".join(f"load {loads}" if f == "load" else f"{f} {given[f]}" for f in off)
    fit = [f"{OPTIONS[f]} {near[f][0]}" for f in off if f in ("size", "queue")]  # the cluster is the user's to choose
    trained = f"{'/'.join(near['cluster'])}, size {'/'.join(near['size'])}, queue {'/'.join(near['queue'])}"
    trained += f", load {_span(near['loads'])}" if near.get("loads") else ""
    advice = f"; {' '.join(fit)} matches it" if fit else ""
    return f"the shipped policy 'learned' was not trained on {what} (its card {path.name}: {trained}){advice}"


def _span(loads: list[float]) -> str:
    """``[0.5, 0.9, 1.3]`` -> ``0.5-1.3``; ``[0.9]`` -> ``0.9``."""
    return f"{min(loads)}" if min(loads) == max(loads) else f"{min(loads)}-{max(loads)}"
