"""Shipped job graphs and graph references (a shipped name or a JSON path)."""

from __future__ import annotations

from pathlib import Path

from placer.common.errors import GraphValidationError
from placer.common.shipped import data_dir
from placer.graphs.job_graph import JobGraph, load_job_graph

PACML_GRAPHS = ("alexnet", "vgg16", "resnet18", "squeezenet1_0", "gnmt")


def graphs_dir() -> Path:
    return data_dir() / "graphs"


def shipped_graph_names() -> list[str]:
    return sorted(p.stem for p in graphs_dir().glob("*.json"))


def resolve_graph(ref: str | Path) -> JobGraph:
    """Load a graph from a JSON path, or by name from the shipped graphs."""
    if not str(ref).strip():
        raise GraphValidationError(f"an empty graph name: name a shipped graph ({', '.join(shipped_graph_names())}) or a JSON file")
    path = Path(ref)
    if path.suffix == ".json" or path.exists():
        return load_job_graph(path)
    shipped = graphs_dir() / f"{ref}.json"
    if not shipped.exists():
        raise GraphValidationError(f"unknown graph {str(ref)!r}: not a file, nor a shipped graph ({', '.join(shipped_graph_names())})")
    return load_job_graph(shipped)


def resolve_graphs(refs: list[str] | None = None, directory: str | Path | None = None) -> list[JobGraph]:
    """Graphs named in ``refs``, or every ``*.json`` in ``directory``."""
    if directory is not None:
        paths = sorted(Path(directory).glob("*.json"))
        if not paths:
            raise GraphValidationError(f"no *.json job graphs in {str(directory)!r}")
        return [load_job_graph(p) for p in paths]
    if not refs:
        raise GraphValidationError("no graphs given")
    return [resolve_graph(r) for r in refs]
