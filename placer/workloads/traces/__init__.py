"""Public GPU-cluster traces converted to placer's replay format (``arrival_s,graph,beta,iterations``).

    placer import trace gavel data/traces/gavel_msr_0e4a51.trace --out runs/gavel.csv --beta-dist C
    placer import trace helios Venus/cluster_log.csv --out runs/helios.csv --start 2020-09-01 --jobs 2000

One module per format (``gavel``, ``philly`` (Pollux's summary), ``philly_log``, ``helios``, ``pai``,
``openb``, ``acme``, ``pollux``) reads rows into :class:`TraceJob` records (:mod:`.core`); one mapping
(:mod:`.mapping`) turns them into graphs, iterations, arrivals that keep their time of day, and deadlines
drawn by one :class:`DeadlineRule`. Formats, sources, licences and rules: docs/traces.md.
"""

from placer.workloads.traces.core import ImportReport, TraceFormat, TraceJob, TraceRow, write_trace
from placer.workloads.traces.formats import FORMATS, import_trace
from placer.workloads.traces.gavel import GAVEL_GRAPHS, convert_gavel
from placer.workloads.traces.mapping import MODEL_GRAPHS, DeadlineRule, GraphMapping
from placer.workloads.traces.philly import BETA_FLOOR, convert_philly

__all__ = [
    "BETA_FLOOR",
    "FORMATS",
    "GAVEL_GRAPHS",
    "MODEL_GRAPHS",
    "DeadlineRule",
    "GraphMapping",
    "ImportReport",
    "TraceFormat",
    "TraceJob",
    "TraceRow",
    "convert_gavel",
    "convert_philly",
    "import_trace",
    "write_trace",
]
