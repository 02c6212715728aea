"""Blocking against completion time: per evaluation, every policy's avoidable blocking and mean JCT pooled over loads,
beta distributions and seeds, the policies no other beats on both (the measured frontier), and what the best policy
within a JCT budget (a multiple of the fastest policy's) blocks.

Rendered from other figures' result files (``results.json`` in each one's result folder,
:func:`~tools.figures.core.results_dir`), never by running anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from tools.figures.core import Rendered, beside
from tools.figures.regimes import commands_of
from tools.figures.render import Renderer

BUDGET = 1.25  # the JCT budget, as a multiple of the fastest policy's mean JCT (issue 29's target)


def pooled(runs: list[dict]) -> dict[str, tuple[float, float]]:
    """Per policy, in the order run: (mean avoidable blocking rate, mean of the runs' mean JCT in seconds)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        out.setdefault(run["policy"], []).append((run["avoidable_blocking_rate"], run["mean_jct_s"]))
    return {p: (math.fsum(b for b, _ in v) / len(v), math.fsum(j for _, j in v) / len(v)) for p, v in out.items()}


def frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """The policies that no other policy beats on both blocking and JCT (ties on both kept), by rising JCT."""
    kept = [
        p
        for p, (b, j) in points.items()
        if not any((b2 <= b and j2 <= j) and (b2 < b or j2 < j) for q, (b2, j2) in points.items() if q != p)
    ]
    return sorted(kept, key=lambda p: points[p][1])


def tradeoff(evaluations: dict[str, str], image: str) -> Renderer:
    """``evaluations``: label -> the figure whose ``results.json`` it reads (in that figure's result folder); ``image``:
    the scatter plot, a repository path beside the document."""

    def render(folder: Path) -> Rendered:
        points = {label: pooled(_runs(beside(folder, name))) for label, name in evaluations.items()}
        commands = commands_of(folder, evaluations.values())
        lines = [commands.rstrip("\n"), "", *_table(points), "", f"![avoidable blocking against mean JCT]({Path(image).name})"]
        return Rendered("\n".join(lines) + "\n", {image: lambda path: _plot(points, path)})

    return render


def _runs(folder: Path) -> list[dict]:
    return json.loads((folder / "results.json").read_text())["runs"]


def _table(points: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    within = f"least blocking within {BUDGET:g}x its JCT"
    head = ["evaluation", "fastest: policy, mean JCT", within, "least blocking: policy, JCT", "frontier"]
    out = [
        "Pooled over loads, beta distributions and seeds: avoidable blocking and mean JCT (s); the frontier lists, by rising "
        "JCT, the policies no other beats on both.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|---|---|---|",
    ]
    for label, by in points.items():
        fastest = min(by, key=lambda p: by[p][1])
        budget = BUDGET * by[fastest][1]
        within = min((p for p in by if by[p][1] <= budget), key=lambda p: by[p][0])
        least = min(by, key=lambda p: by[p][0])
        cells = [
            label,
            f"`{fastest}`, {by[fastest][1]:.0f}",
            f"`{within}`, {by[within][0]:.3f}",
            f"`{least}`, {by[least][0]:.3f} at {by[least][1]:.0f} ({by[least][1] / by[fastest][1]:.1f}x)",
            ", ".join(f"`{p}` ({by[p][0]:.3f}, {by[p][1]:.0f})" for p in frontier(by)),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _plot(points: dict[str, dict[str, tuple[float, float]]], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    columns = 2
    rows = math.ceil(len(points) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 4.5 * rows), squeeze=False)
    for ax, (label, by) in zip(axes.flat, points.items(), strict=False):
        on = set(frontier(by))
        for policy, (blocking, jct) in by.items():
            learned = policy.startswith("learned")
            ax.scatter(jct, blocking, marker="*" if learned else "o", s=70 if learned else 30, color="C3" if learned else "C0")
            ax.annotate(policy, (jct, blocking), fontsize=6, xytext=(3, 2), textcoords="offset points", alpha=1.0 if policy in on else 0.5)
        line = sorted((by[p][1], by[p][0]) for p in on)
        ax.plot([x for x, _ in line], [y for _, y in line], color="gray", lw=1, ls="--")
        fastest = min(j for _, j in by.values())
        ax.axvline(BUDGET * fastest, color="C2", lw=1, ls=":")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([50, 100, 200, 400])
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(f"mean JCT (s); dotted: {BUDGET:g}x the fastest")
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("avoidable blocking rate")
    for ax in list(axes.flat)[len(points) :]:
        ax.set_visible(False)
    fig.suptitle("Avoidable blocking against mean JCT, pooled over loads 0.5, 0.9, 1.3 (dashed: the frontier)")
    fig.tight_layout()
    fig.savefig(target, dpi=120, bbox_inches="tight")
    plt.close(fig)
