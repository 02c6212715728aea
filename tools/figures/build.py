"""Building blocks of the figure registry: a figure made by one ``placer evaluate``, and the slug of a regime's label."""

from __future__ import annotations

from tools.figures.core import Figure, Step
from tools.figures.render import evaluation


def evaluated(name: str, document: str, presets: tuple[str, ...], options: str, *, before: tuple[str, ...] = (), **render) -> Figure:
    """A figure made by ``placer evaluate OPTIONS`` (after the ``before`` commands) and shown by ``placer report``."""
    steps = (*(Step(c) for c in before), Step(f"placer evaluate {options} --out runs/figures/{name}"))
    return Figure(
        name, document, presets, steps, evaluation("results.json", **render), keep={"results.json": f"runs/figures/{name}/results.json"}
    )


def slug(label: str) -> str:
    """``"dgx8x8, Poisson"`` -> ``"dgx8x8-poisson"``."""
    return label.lower().replace(", ", "-").replace(" ", "-")
