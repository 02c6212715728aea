"""What a recipe ships: its candidates (the distilled student and the RL winner) validated against ``best`` regime by
regime on the same streams, the one that ships chosen, and the verdict (serve it, or the heuristic where learning did
not pay).

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


def verdict(validated: Validated, table: Any, clusters: list[str]) -> tuple[str, str]:
    """Whether learning paid on this run's regimes, and the ``placer serve`` line that serves the answer: the learned
    policy where it blocks no more than ``best`` in any regime and fewer pooled over every validation stream (the pooled
    interval of best - it lies above 0), else the heuristic ``best`` chose most often in the student's teacher table
    (``table``: its ``members.json``). One regime resolved better is not enough: among many regimes of a few streams
    each, some are, by chance. A service runs one cluster: trained on several (``clusters``), the line serves the first
    and says so in a shell comment."""
    cluster = clusters[0]
    others = f"  # trained for {', '.join(clusters)}: one service per cluster" if len(clusters) > 1 else ""
    pooled = validated.pooled
    if validated.worse_regimes == 0 and pooled.difference - (0 if np.isnan(pooled.half) else pooled.half) > 0:
        return "learned", f"placer serve --cluster {cluster} --policy-file PATH{others}"
    members = list((table or {}).get("members", {}).values())
    families = [m for m in members if not m.startswith("learned")] or ["best"]
    member = max(dict.fromkeys(families), key=families.count)
    return member, f"placer serve --cluster {cluster} --heuristic {member}{others}"
