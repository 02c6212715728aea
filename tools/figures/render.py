"""Renderers: a figure's result files to its markdown block (and PNGs), never by running anything again."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path

from tools.figures.core import META, Rendered, results_dir

Renderer = Callable[[Path], Rendered]


def _commands(folder: Path) -> str:
    """The commands recorded in ``figure.json``, as an indented block."""
    meta = json.loads((folder / META).read_text())
    return "".join(f"    {command}\n" for command in meta["commands"]) + "\n"


def evaluation(*files: str, against: str | None = None, image: str | None = None, alt: str = "", outcomes: bool = False) -> Renderer:
    """``placer report`` of the kept evaluation results (several: the same streams, paired), in markdown
    (``outcomes``: with ``--outcomes``, what a policy can change).

    With ``image`` (a path relative to the repository, beside the document) the blocking-rate bars
    are drawn there from the same results.
    """

    def render(folder: Path) -> Rendered:
        from placer.cli.report import report
        from placer.cli.tables import TableFormat

        paths = [folder / name for name in files]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            report(paths, plots=False, against=against, hindsight=None, fmt=TableFormat.markdown, outcomes=outcomes)
        shown = " ".join((results_dir(folder.name, folder.parents[2]) / name).as_posix() for name in files)
        again = f"    placer report {shown}" + (f" --against {against}" if against else "") + (" --outcomes" if outcomes else "") + "\n\n"
        markdown = _commands(folder) + again + out.getvalue().rstrip("\n") + "\n"
        images = {}
        if image is not None:
            markdown += f"\n![{alt}]({Path(image).name})\n"
            images[image] = lambda path: _blocking_bars(paths, path)
        return Rendered(markdown, images)

    return render


def _blocking_bars(paths: list[Path], target: Path) -> None:
    from placer.evaluate import merge_results, read_results
    from placer.evaluate.plots import plot_metric

    loaded = [read_results(json.loads(path.read_text()), path.parent) for path in paths]  # a trace's runs: load None
    plot_metric(merge_results(loaded), "blocking_rate", target)


def printed(name: str) -> Renderer:
    """What the figure's command printed (kept as ``name``), verbatim under the command."""

    def render(folder: Path) -> Rendered:
        return Rendered(_commands(folder) + (folder / name).read_text().strip("\n") + "\n")

    return render


def timeline(name: str) -> Renderer:
    """The DDP-timeline fidelity table, from ``experiments/studies/fidelity_timeline.py --json``'s numbers: per testbed, the held-out
    median error of each calibration (file opted in; no opt-in keys with form selection, in its own form only, links held)."""

    def percent(x: float) -> str:
        return f"{100 * x:.1f} %"

    def render(folder: Path) -> Rendered:
        lines = [
            "| testbed | file opted in (`kind`) | no opt-in keys, form selected (CV: opted-in / file form) "
            "| no opt-in keys, own form only | no opt-in keys, links held |",
            "|---|---:|---:|---:|---:|",
        ]
        for t in json.loads((folder / name).read_text())["testbeds"]:
            selected = f"{percent(t['selected_calibrated'])}, {'opted-in' if t['selected_comm'] else 'file form'} kept"
            if "selected_cv_comm" in t:
                selected += f" ({percent(t['selected_cv_comm'])} / {percent(t['selected_cv_file'])})"
            cells = (percent(t["after_calibrated"]), selected, percent(t["file_calibrated"]), percent(t["before_calibrated"]))
            lines.append(f"| {t['label']} | {' | '.join(cells)} |")
        return Rendered(_commands(folder) + "\n".join(lines) + "\n")

    return render


def scaling(name: str, image: str, alt: str) -> Renderer:
    """The scaling table on ``dgx8x8`` and the efficiency plot, from ``experiments/studies/scaling_plot.py --json``'s data."""

    def render(folder: Path) -> Rendered:
        data = json.loads((folder / name).read_text())
        lines = [
            "| graph | batch | 8 GPUs, one server: strategy, scaling | 16 GPUs, two servers: strategy, scaling "
            "| `sipml` scaling at 8 / 16 |",
            "|---|---:|---|---|---|",
        ]
        for graph in data["table"]:
            row = data["graphs"][graph]
            auto, sipml = row["auto"], row["sipml"]
            lines.append(
                f"| {graph} | {row['batch']} | {auto['8']['strategy']}, {auto['8']['efficiency']:.2f} "
                f"| {auto['16']['strategy']}, {auto['16']['efficiency']:.2f} "
                f"| {sipml['8']['efficiency']:.2f} / {sipml['16']['efficiency']:.2f} |"
            )
        markdown = _commands(folder) + "\n".join(lines) + f"\n\n![{alt}]({Path(image).name})\n"
        return Rendered(markdown, {image: lambda path: scaling_plot(data, path)})

    return render


def scaling_plot(data: dict, target: Path) -> None:
    """Efficiency against degree, one panel per cost model, for the graphs ``data['plotted']`` names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    degrees = data["degrees"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, strategy in zip(axes, ("sipml", "auto"), strict=True):
        for graph in data["plotted"]:
            ax.plot(degrees, [data["graphs"][graph][strategy][str(d)]["efficiency"] for d in degrees], marker="o", label=graph)
        ax.set_xscale("log", base=2)
        ax.set_xticks(degrees, [str(d) for d in degrees])
        ax.set_xlabel("degree (GPUs, packed on the fewest servers)")
        ax.set_title("PAC-ML op splitting (sipml)" if strategy == "sipml" else "data x tensor x pipeline (auto)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("scaling efficiency (sequential / (degree x time))")
    axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
    fig.suptitle(f"How far jobs scale on {data['cluster']} ({data['shape']}), each graph at its profiled batch")
    fig.tight_layout()
    fig.savefig(target, dpi=120, bbox_inches="tight")
    plt.close(fig)
