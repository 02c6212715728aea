"""What a recipe ships: its candidates (the distilled student and the RL winner) validated against ``best`` regime by
regime on the same streams, the one that ships chosen, and the verdict (serve it, or the shipped policy where that one
pays and blocks less on the same streams, or the heuristic where learning did not pay, and why).

The choice (:func:`choose_product`): a candidate no worse than ``best`` in any regime before one that is, then the lower
pooled blocking rate, then the student. Both were validated on streams apart from every training and tuning stream, so
the choice is paired; it is still a choice made on those streams, and the promotion's check against the policy it
would replace (:mod:`placer.policies.promotion`) and the README's evaluation run on others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from placer.policies.config import TrainConfig
from placer.policies.validation import RatesCache, RegimeRow, pooled_row, regime_rows, validation_regimes

STUDENT, RL_WINNER = "student", "rl-winner"  # a recipe's candidates, as its card names them
LEARNED, SHIPPED = "learned", "shipped"  # what a verdict may serve besides a heuristic: this run's policy, the shipped one


class Validated(BaseModel):
    """One candidate against its reference: per regime and pooled over every validation stream."""

    model_config = ConfigDict(frozen=True)
    policy: str  # its file
    regimes: list[RegimeRow]
    pooled: RegimeRow

    @property
    def worse_regimes(self) -> int:
        """Regimes whose interval says it blocks more than the reference."""
        return sum(not r.not_worse for r in self.regimes)


def validate_policy(
    policy_file: Path, config: TrainConfig, episodes: int, cache: RatesCache, reference: Path | None = None, progress: bool = False
) -> Validated:
    """The policy of ``policy_file`` against ``best`` (or the policy file ``reference``) on the validation streams of
    ``config``'s environment, per regime and pooled (``progress``: a bar over each policy's streams)."""
    env, workers, ray = config.env, config.train.eval_workers, config.train.ray
    learned = np.asarray(cache.file_rates(policy_file, env, episodes, workers, progress, ray=ray))
    if reference is None:
        reference_rates = np.asarray(cache.rates("best", env, episodes, workers, progress, ray=ray))
    else:
        reference_rates = np.asarray(cache.file_rates(reference, env, episodes, workers, progress, ray=ray))
    rows = regime_rows(learned, reference_rates, validation_regimes(env, episodes))
    return Validated(policy=str(policy_file), regimes=rows, pooled=pooled_row(learned, reference_rates))


def choose_product(candidates: dict[str, Validated]) -> str:
    """The candidate that ships: no regime worse than ``best`` first, then the lower pooled blocking, then the first
    named (the student) among equals."""
    names = list(candidates)
    return min(names, key=lambda n: (candidates[n].worse_regimes > 0, candidates[n].pooled.learned, names.index(n)))


def regime_lines(rows: list[RegimeRow], reference: str = "best", name: str = "policy") -> list[str]:
    """A terminal table: per regime the blocking rates and reference - policy (positive: the policy blocks fewer)."""
    width = max((len(r.regime) for r in rows), default=6) + 2
    column = max(len(reference) + 1, 9)
    out = [f"{'regime':<{width}}{'streams':>8}{name:>9}{reference:>{column}}   {reference} - {name} (95 %)"]
    for r in rows:
        half = "n/a" if np.isnan(r.half) else f"{r.half:.3f}"
        verdict = "" if r.not_worse else "  worse"
        out.append(f"{r.regime:<{width}}{r.streams:>8}{r.learned:>9.4f}{r.reference:>{column}.4f}   {r.difference:+.4f} ± {half}{verdict}")
    return out


def pays(validated: Validated) -> bool:
    """It blocks no more than ``best`` in any regime and fewer pooled over every validation stream (the pooled interval
    of best - it lies above 0). One regime resolved better is not enough: among many regimes of a few streams each,
    some are, by chance."""
    pooled = validated.pooled
    return validated.worse_regimes == 0 and pooled.difference - (0 if np.isnan(pooled.half) else pooled.half) > 0


def verdict(validated: Validated, table: Any, clusters: list[str], shipped: Validated | None = None) -> tuple[str, str]:
    """What to serve on this run's regimes, and the ``placer serve`` line that serves it: of this run's policy
    (``learned``) and the shipped one (``shipped``, validated on the same streams, where given), whichever :func:`pays`
    and blocks less pooled (this run's at equal rates); where neither pays, the heuristic ``best`` chose most often in
    the student's teacher table (``table``: its ``members.json``). A service runs one cluster: trained on several
    (``clusters``), the line serves the first and says so in a shell comment."""
    cluster = clusters[0]
    others = f"  # trained for {', '.join(clusters)}: one service per cluster" if len(clusters) > 1 else ""
    learned = [(name, v) for name, v in ((LEARNED, validated), (SHIPPED, shipped)) if v is not None and pays(v)]
    if learned:
        name, chosen = min(learned, key=lambda pair: pair[1].pooled.learned)  # min keeps the first of equals: this run's
        return name, f"placer serve --cluster {cluster} --policy-file {'PATH' if name == LEARNED else chosen.policy}{others}"
    members = list((table or {}).get("members", {}).values())
    families = [m for m in members if not m.startswith("learned")] or ["best"]
    member = max(dict.fromkeys(families), key=families.count)
    return member, f"placer serve --cluster {cluster} --heuristic {member}{others}"


def why_not(validated: Validated, name: str = "the policy") -> str:
    """In words, why ``validated`` does not pay against ``best`` (:func:`pays`), and where its lead is positive but not
    resolved, about how many streams would resolve a lead that size (the interval narrows as one over their root)."""
    pooled = validated.pooled
    if validated.worse_regimes:
        return f"{name} blocks more than best in {validated.worse_regimes} regime(s)"
    if pooled.difference <= 0 or np.isnan(pooled.half):
        return f"{name} blocks no fewer jobs than best pooled ({pooled.learned:.4f} against {pooled.reference:.4f})"
    needed = int(np.ceil(pooled.streams * (pooled.half / pooled.difference) ** 2))
    return (
        f"{name}'s lead over best, {pooled.difference:+.4f} ± {pooled.half:.4f} over {pooled.streams} streams, is not resolved;"
        f" about {needed} streams would resolve a lead that size ([recipe] validation_episodes)"
    )


def verdict_reason(serve: str, validated: Validated, shipped: Validated | None) -> str:
    """:func:`verdict`'s reason for serving ``serve``, in parentheses (none where this run's policy is served)."""
    if serve == LEARNED:
        return ""
    if serve == SHIPPED and shipped is not None:
        return f" (it blocks {shipped.pooled.learned:.4f} pooled, this run's policy {validated.pooled.learned:.4f})"
    theirs = f"; {why_not(shipped, 'the shipped policy')}" if shipped is not None else ""
    return f" (learning did not pay here: {why_not(validated, 'this run')}{theirs})"


def judged(
    validated: Validated, config: TrainConfig, episodes: int, cache: RatesCache, table: Any, progress: bool = False
) -> tuple[str, str, str, Validated | None]:
    """:func:`verdict` of this run's ``validated`` policy beside the shipped one, validated here on the same streams
    of ``config`` (:func:`shipped_candidate`): what to serve, its ``placer serve`` line, the reason in parentheses
    (:func:`verdict_reason`) and the shipped policy's validation (None where it cannot decide on these streams)."""
    shipped = shipped_candidate(config, episodes, cache, progress)
    serve, line = verdict(validated, table, list(config.env.all_clusters), shipped)
    return serve, line, verdict_reason(serve, validated, shipped), shipped


def shipped_candidate(config: TrainConfig, episodes: int, cache: RatesCache, progress: bool = False) -> Validated | None:
    """The shipped policy (:func:`placer.common.shipped.default_policy_file`) against ``best`` on the same validation
    streams as a recipe's candidates; None where it cannot decide on them (its observation does not fit the env)."""
    from placer.common.errors import PlacerError
    from placer.common.shipped import default_policy_file

    try:
        return validate_policy(default_policy_file(), config, episodes, cache, progress=progress)
    except (PlacerError, ValueError):
        return None
