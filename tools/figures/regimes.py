"""The README's regime table: per cluster, arrival pattern and load, the avoidable blocking of the policies that
choose among the heuristic families (``single-best``, ``best``, ``adaptive``), the learned policy and the elastic and
deadline schedulers of :data:`FIELD` where run, paired on the same streams; then pooled over every regime against
``single-best``, with jobs/h and mean JCT.

Rendered from result files of figures (``placer evaluate --load ...`` runs, per cluster and arrival pattern: e.g.
``FIGURE/results.json`` in that figure's result folder, :func:`~tools.figures.core.results_dir`; several files of
one evaluation are the same streams, paired), never by running anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from placer.evaluate.config import load_label
from placer.evaluate.stats import mean_ci95, plus_minus
from tools.figures.core import Rendered, beside
from tools.figures.render import Renderer, _commands

SHOWN = ("single-best", "best", "adaptive")  # then the learned policies evaluated, in the order run, then FIELD's
# ElasticFlow, Chronus, lean that grows and shrinks running jobs, and the best of them tuned per regime
FIELD = ("elasticflow", "chronus", "elastic_lean", "elastic-best")
REFERENCE, TOLD = "single-best", "best"


def regimes(evaluations: dict[str, tuple[str, ...]], *, least: bool = False, only: tuple[str, ...] = (), wide: bool = False) -> Renderer:
    """``evaluations``: the label of each evaluation (``"dgx8x8, Poisson"``) -> its result files, each as the figure
    that made it and the file's name in that figure's result folder (``("families-loads/results.json",)``); ``least``:
    end with the learned policy that blocks least over them all (a choice among learned variants); ``only``: the
    policies shown, where not all (each file's runs are concatenated, so files of other seeds of the same streams'
    settings pool); ``wide``: the pooled table one row per evaluation, a column per policy (the README's)."""

    def render(folder: Path) -> Rendered:
        runs = {label: _runs(folder, files) for label, files in evaluations.items()}
        shown = [p for p in _shown(next(iter(runs.values()))) if not only or p in only]
        commands = commands_of(folder, reads(evaluations))
        lines = [commands.rstrip("\n"), "", *_per_regime(runs, shown), "", *(_pooled_wide if wide else _pooled)(runs, shown)]
        lines += ["", _least(runs, shown)] if least else []
        return Rendered("\n".join(lines) + "\n")

    return render


def commands_of(folder: Path, figures: Iterable[str]) -> str:
    """The commands of ``figures`` (result folders beside ``folder``), one indented block without blank lines."""
    return "".join(_commands(beside(folder, name)) for name in figures).replace("\n\n", "\n")


def reads(evaluations: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The figures whose result files :func:`regimes` of ``evaluations`` reads."""
    return tuple(dict.fromkeys(Path(file).parent.name for files in evaluations.values() for file in files))


def _runs(folder: Path, files: tuple[str, ...]) -> list[dict]:
    """The runs of ``files`` (``FIGURE/NAME``), each read from its figure's result folder (``folder``: this figure's)."""
    paths = [beside(folder, Path(file).parent.name) / Path(file).name for file in files]
    return [run for path in paths for run in json.loads(path.read_text())["runs"]]


def _least(runs: dict[str, list[dict]], shown: list[str]) -> str:
    """The learned policy with the least avoidable blocking, mean over the evaluations of each one's mean."""
    learned = [p for p in shown if p.startswith("learned") and all(_by(rows, p, "avoidable_blocking_rate") for rows in runs.values())]
    means = {p: math.fsum(_mean(rows, p, "avoidable_blocking_rate") for rows in runs.values()) / len(runs) for p in learned}
    least = min(means, key=means.__getitem__)
    return f"The learned policy with the least avoidable blocking (mean of the evaluations' means): `{least}`, {means[least]:.4f}."


def _shown(runs: list[dict]) -> list[str]:
    policies = list(dict.fromkeys(r["policy"] for r in runs))
    return [p for p in SHOWN if p in policies] + [p for p in policies if p.startswith("learned")] + [p for p in FIELD if p in policies]


def _by(runs: list[dict], policy: str, metric: str) -> dict[tuple, float]:
    """(load, beta, seed) -> ``metric`` of ``policy``."""
    return {(r.get("load"), r["beta_dist"], r["seed"]): r[metric] for r in runs if r["policy"] == policy}


def _paired(runs: list[dict], policy: str, against: str, metric: str = "avoidable_blocking_rate", load=None) -> tuple[float, float]:
    mine, theirs = _by(runs, policy, metric), _by(runs, against, metric)
    keys = [k for k in mine if k in theirs and (load is None or k[0] == load)]
    return mean_ci95([mine[k] - theirs[k] for k in keys])


def _mean(runs: list[dict], policy: str, metric: str, load=None) -> float:
    values = [v for k, v in _by(runs, policy, metric).items() if load is None or k[0] == load]
    return math.fsum(values) / len(values) if values else math.nan


def _per_regime(runs: dict[str, list[dict]], shown: list[str]) -> list[str]:
    head = ["evaluation", "load", "unavoidable", *shown[:2], *(f"{p} (minus {TOLD})" for p in shown[2:])]
    out = ["Avoidable blocking (blocked among the jobs some policy could serve), mean over beta A-D x seeds; "
           f"for the online policies the paired difference to `{TOLD}` (told the regime), 95 % interval:", "",
           "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]  # fmt: skip
    for label, rows in runs.items():
        for load in dict.fromkeys(r.get("load") for r in rows):
            cells = [label, load_label(load), f"{_unavoidable(rows, load):.3f}"]  # a replayed trace's runs: load None
            cells += [f"{_mean(rows, p, 'avoidable_blocking_rate', load):.3f}" for p in shown[:2]]
            for p in shown[2:]:
                diff, half = _paired(rows, p, TOLD, load=load)
                cells.append(f"{_mean(rows, p, 'avoidable_blocking_rate', load):.3f} ({_signed(diff, half)})")
            out.append("| " + " | ".join(cells) + " |")
    return out


def _unavoidable(rows: list[dict], load) -> float:
    values = [r["unavoidable_share"] for r in rows if r.get("load") == load]
    return math.fsum(values) / len(values)


def _pooled(runs: dict[str, list[dict]], shown: list[str]) -> list[str]:
    """Per evaluation, pooled over loads, betas and seeds: avoidable blocking, jobs/h and mean JCT against single-best."""
    head = ["evaluation", "policy", f"avoidable blocking minus {REFERENCE}", "relative", "jobs/h", "mean JCT (s)"]
    out = [f"Pooled over loads, beta distributions and seeds, paired against `{REFERENCE}` (95 % interval):", "",
           "| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]  # fmt: skip
    for label, rows in runs.items():
        base = _mean(rows, REFERENCE, "avoidable_blocking_rate")
        for p in shown:
            diff, half = _paired(rows, p, REFERENCE)
            relative = f"{diff / base:+.0%}" if base > 0 else "-"
            jobs_h, jct = _mean(rows, p, "throughput_jobs_per_hour"), _mean(rows, p, "mean_jct_s")
            cells = [label, p, _signed(diff, half), relative, f"{jobs_h:.1f}", f"{jct:.0f}"]
            out.append("| " + " | ".join(cells) + " |")
    return out


def _pooled_wide(runs: dict[str, list[dict]], shown: list[str]) -> list[str]:
    """One row per evaluation, pooled over loads, betas and seeds: each policy's avoidable blocking minus single-best's
    (paired), its jobs/h and mean JCT."""
    head = ["evaluation", *shown]
    out = [f"Pooled over loads, beta distributions and seeds: avoidable blocking minus `{REFERENCE}`'s, paired (95 % "
           "interval); jobs/h; mean JCT:", "",
           "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]  # fmt: skip
    for label, rows in runs.items():
        cells = [label]
        for p in shown:
            diff, half = _paired(rows, p, REFERENCE)
            jobs_h, jct = _mean(rows, p, "throughput_jobs_per_hour"), _mean(rows, p, "mean_jct_s")
            cells.append(f"{_signed(diff, half) if p != REFERENCE else '0'}; {jobs_h:.0f}/h; {jct:.0f} s")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _signed(diff: float, half: float) -> str:
    return ("+" if diff >= 0 else "") + plus_minus(diff, half)
