"""Figures of the field's workloads and schedulers: every policy family on replayed Philly virtual clusters (the tuned
ones tuned on another window of the same log), and the elastic and deadline schedulers on the README's regime streams."""

from __future__ import annotations

from tools.figures.build import evaluated, slug
from tools.figures.core import Figure, Step
from tools.figures.elastic import elastic_table
from tools.figures.regimes import reads

# every family, best, adaptive, the shipped learned policy and the field's deadline schedulers on a replayed Philly virtual cluster:
# its first 600 jobs, the tuned policies tuned on the 600 after them (--tune-trace; --start past the evaluated window's end)
TRACE_FAMILIES = (
    "lean,lean:admit=0.9,fixed:8,para_max,para_min+best_fit,eff:0.7,switch:0.5,single-best,best,adaptive,learned,elasticflow,chronus"
)
# the runs of FIELD on a figure's streams, each into its own result file (its name's suffix): elastic-best tunes ten
# candidates per workload, so it runs apart from the schedulers it chooses among
FIELD_RUNS = (("", "elasticflow,chronus,elastic_lean"), ("-tuned", "elastic-best"))
PHILLY_WINDOWS = {"6214e9": "2017-09-25", "11cb48": "2017-09-28"}  # virtual cluster -> the tuning window's --start


def trace_families(vc: str, start: str, document: str) -> Figure:
    """``philly-VC-families``: :data:`TRACE_FAMILIES` on virtual cluster ``vc``'s first 600 jobs, tuned on 600 from ``start``."""
    importing = f"placer import trace philly data/traces/philly_pollux.csv --vc {vc} --jobs 600"
    replayed, tuning = f"runs/figures/philly-{vc}.csv", f"runs/figures/philly-{vc}-tuning.csv"
    return evaluated(
        f"philly-{vc}-families",
        document,
        ("dgx8x8",),
        f"--cluster dgx8x8 --trace {replayed} --tune-trace {tuning} --seeds 1 --queue edf-bf --policies {TRACE_FAMILIES} --workers 2",
        before=(f"{importing} --out {replayed}", f"{importing} --start {start} --out {tuning}"),
        outcomes=True,
    )


def elastic_figure(name: str, document: str, runs: dict[str, tuple[str, str, str]], options: str, learned: str) -> Figure:
    """:data:`FIELD_RUNS` with ``placer evaluate OPTIONS`` on the streams of ``runs`` (label -> (the
    figure whose evaluation it is, its cluster, extra options)), beside those figures' ``best`` and the shipped ``learned``
    (in ``blend-quiet-figures``): the same streams, paired."""
    steps = tuple(
        Step(f"placer evaluate --cluster {cluster} {options}{extra} --policies {policies} --out runs/figures/{name}/{slug(label)}{suffix}")
        for label, (_, cluster, extra) in runs.items()
        for suffix, policies in FIELD_RUNS
    )
    keep = {
        f"{slug(label)}{suffix}.json": f"runs/figures/{name}/{slug(label)}{suffix}/results.json"
        for label in runs
        for suffix, _ in FIELD_RUNS
    }
    files: dict[str, tuple[str, ...]] = {
        label: (f"{figure}/results.json", f"blend-quiet-figures/{slug(label)}.json", *field_files(name, label))
        for label, (figure, _, _) in runs.items()
    }
    presets = tuple(dict.fromkeys(cluster for _, cluster, _ in runs.values()))
    others = tuple(figure for figure in reads(files) if figure != name)
    return Figure(name, document, presets, steps, elastic_table(files, learned), keep=keep, reads=others)


def field_files(name: str, label: str) -> tuple[str, ...]:
    """The result files of figure ``name`` that hold :data:`FIELD_RUNS` on the streams of evaluation ``label``."""
    return tuple(f"{name}/{slug(label)}{suffix}.json" for suffix, _ in FIELD_RUNS)
