"""The elastic policies and the field's deadline schedulers beside ``best`` and the shipped learned policy, on the README's
regime streams: per regime and load, avoidable blocking (mean over beta A-D x seeds, and the paired difference to
``best``, 95 % interval) beside the mean JCT (and, for :data:`~tools.figures.regimes.FIELD`, the resizes a stream), so
that what each buys its blocking with shows in the same cell.

Rendered from result files of figures (several files of one regime are the same streams, paired), never by running anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from placer.evaluate.config import load_label
from tools.figures.core import FigureError, Rendered
from tools.figures.regimes import FIELD, TOLD, _mean, _paired, _runs, _signed, commands_of, reads
from tools.figures.render import Renderer, _commands

RESIZING = ("elasticflow", "elastic_lean", "elastic_lean:shrink=all")  # the admission table's elastic policies
ADMITTED = ("para_min", "lean", TOLD, "fixed:8", "chronus", *RESIZING)  # its columns


def elastic_table(evaluations: dict[str, tuple[str, ...]], learned: str) -> Renderer:
    """``evaluations``: a regime's label -> its result files (``FIGURE/FILE``, see :func:`~tools.figures.regimes.regimes`)
    holding :data:`TOLD`, ``learned`` and :data:`FIELD` on the same streams."""

    def render(folder: Path) -> Rendered:
        runs = {label: _runs(folder, files) for label, files in evaluations.items()}
        commands = commands_of(folder, reads(evaluations))
        shown = (TOLD, learned, *FIELD)
        head = ["evaluation", "load", *shown]
        lines = [
            commands.rstrip("\n"),
            "",
            f"Avoidable blocking, mean over beta A-D x seeds (the paired difference to `{TOLD}`, 95 % interval), mean JCT, and "
            "for the elastic and deadline schedulers the running jobs resized a stream:",
            "",
            "| " + " | ".join(head) + " |",
            "|---|" + "---:|" * (len(head) - 1),
        ]
        for label, rows in runs.items():
            for load in dict.fromkeys(r.get("load") for r in rows):
                cells = [label, load_label(load)]  # a replayed trace's runs: load None
                for policy in shown:
                    blocking, jct = _mean(rows, policy, "avoidable_blocking_rate", load), _mean(rows, policy, "mean_jct_s", load)
                    paired = "" if policy == TOLD else f" ({_signed(*_paired(rows, policy, TOLD, load=load))})"
                    resizes = f", {_mean(rows, policy, 'resizes', load):.0f} resizes" if policy in FIELD else ""
                    cells.append(f"{blocking:.3f}{paired}, {jct:.0f} s{resizes}")
                lines.append("| " + " | ".join(cells) + " |")
        return Rendered("\n".join(lines) + "\n")

    return render


def admission_table(name: str) -> Renderer:
    """ElasticFlow's headline in its own terms, from one evaluation's result file ``name`` (the loss system, so an admitted
    job is one that meets its deadline): per load, the jobs each of :data:`ADMITTED` admitted over every run (summed over
    seeds), the elastic policies' admissions over ``best``'s, and the share of avoidable jobs each blocked (mean over runs)."""

    def render(folder: Path) -> Rendered:
        runs = json.loads((folder / name).read_text())["runs"]
        missing = [p for p in ADMITTED if not any(r["policy"] == p for r in runs)]
        if missing:
            raise FigureError(f"{folder / name}: no runs of {', '.join(missing)}; run the figure's command again")
        blocked = (TOLD, "chronus", *RESIZING)
        head = [*ADMITTED, *(f"{p} / {TOLD}" for p in RESIZING), "avoidable blocked: " + ", ".join(blocked)]
        lines = ["| load | " + " | ".join(head) + " |", "| --- |" + " --- |" * len(head)]
        for load in dict.fromkeys(r["load"] for r in runs):
            at = [r for r in runs if r["load"] == load]
            admitted = {p: sum(r["accepted"] for r in at if r["policy"] == p) for p in ADMITTED}
            shares = [_mean(at, p, "avoidable_blocking_rate") for p in blocked]
            ratios = [f"{admitted[p] / admitted[TOLD]:.2f}" if admitted[TOLD] else "-" for p in RESIZING]
            cells = [load_label(load), *(str(admitted[p]) for p in ADMITTED), *ratios, ", ".join(f"{x:.3f}" for x in shares)]
            lines.append("| " + " | ".join(cells) + " |")
        jobs = sum(r["jobs"] for r in runs if r["policy"] == TOLD and r["load"] == runs[0]["load"])
        return Rendered(_commands(folder) + f"Jobs admitted out of {jobs} a load:\n\n" + "\n".join(lines) + "\n")

    return render
