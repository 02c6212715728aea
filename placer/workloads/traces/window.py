"""What a replayed trace's window holds, in one line, and when its replay means little, what would make it mean more.

A window of a raw trace can span weeks and hold jobs that run for a month: replayed on a cluster of a few dozen GPUs
it offers several times the work the cluster serves, and every policy blocks most of it. The offered load is
:func:`~placer.workloads.generator.trace_load`'s, the one a tuning on the trace uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LONG_S = 86400.0  # a job longer than a day alone on one GPU
MOST_LOAD = 1.5  # above this offered load (the shipped policy trained up to 1.3) most work is blocked whatever the policy
MOST_LONG = 0.1  # ...or when this share of the jobs runs over a day
VC_KINDS = ("philly", "philly-log", "helios")  # the importers that take --vc


@dataclass(frozen=True)
class Window:
    """``jobs`` replayed over ``span_h`` hours; ``long_share``: those whose sequential JCT exceeds :data:`LONG_S`;
    ``load``: the offered load on ``devices`` GPUs (None with fewer than two distinct arrival times)."""

    jobs: int
    span_h: float
    long_share: float
    load: float | None
    devices: int

    def line(self) -> str:
        """``the window: N jobs over H h (R an hour), S % of them longer than a day on one GPU; offered load L on D GPUs``."""
        rate = f" ({self.jobs / self.span_h:.2g} an hour)" if self.span_h > 0 else ""
        load = f"offered load {self.load:.2f} on {self.devices} GPUs" if self.load is not None else "no offered load (one arrival time)"
        long = f"{self.long_share:.0%} of them longer than a day on one GPU"
        return f"the window: {self.jobs} jobs over {self.span_h:.1f} h{rate}, {long}; {load}"

    @property
    def meaningless(self) -> bool:
        """Whether most of its work is blocked whatever the policy: load above :data:`MOST_LOAD` or over
        :data:`MOST_LONG` of its jobs longer than a day."""
        return (self.load is not None and self.load > MOST_LOAD) or self.long_share > MOST_LONG


def describe(path: str | Path, cluster: str) -> Window:
    """The window of the replay trace at ``path`` (``arrival_s,graph,beta,iterations``) on ``cluster``."""
    from placer.cluster.topology import load_cluster
    from placer.cost import CostModel
    from placer.graphs.catalog import resolve_graph
    from placer.workloads.generator import read_trace, trace_load

    loaded = load_cluster(cluster)
    cost = CostModel(loaded)
    specs = read_trace(path, {}, resolve_graph)
    lengths = np.array([cost.sequential_jct_s(s.graph, s.iterations) for s in specs])
    span = specs[-1].arrival_s - specs[0].arrival_s
    load = trace_load(specs, cost.sequential_jct_s, loaded.num_devices) if len(specs) > 1 and span > 0 else None
    return Window(len(specs), span / 3600, float(np.mean(lengths > LONG_S)), load, loaded.num_devices)


def advice(window: Window, offer_vc: bool = True, vcs: Counter[str] | None = None) -> str | None:
    """When ``window`` means little, a line proposing what makes it meaningful: one virtual cluster (``--vc``, where
    ``offer_vc``; the busiest of ``vcs`` named where known) or a later ``--start``; else None."""
    if not window.meaningless:
        return None
    options = []
    if offer_vc:
        busiest = f" {vcs.most_common(1)[0][0]}, {vcs.most_common(1)[0][1]} of these jobs" if vcs else " NAME"
        options.append(f"one virtual cluster's jobs (import with --vc{busiest})")
    options.append("a later --start (a trace's first rows hold the jobs already running when it began)")
    return f"most of this window's work is blocked whatever the policy: {' or '.join(options)} makes it meaningful (docs/traces.md)"
