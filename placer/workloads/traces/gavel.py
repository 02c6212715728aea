"""Gavel's job traces (MSR-derived, ``scheduler/traces/msr/``): tab-separated, one job a line.

    placer import trace gavel data/traces/gavel_msr_0e4a51.trace --out runs/gavel.csv --beta-dist C

Each job's model maps to a shipped graph (:data:`GAVEL_GRAPHS`: the networks Gavel's job types run,
imported from PyTorch by :mod:`placer.graphs.gavel_models`; ResNet-50 is PipeDream's ImageNet profile),
rescaled to the job's batch size (``graph@batch``); iterations = the trace's total steps; arrival = its
arrival time (s). The trace has no deadlines: the shared :class:`~placer.workloads.traces.mapping.DeadlineRule`
draws one per job, in file order.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from placer.common.errors import WorkloadError
from placer.common.textfile import read_text
from placer.workloads.generator import BetaDistribution
from placer.workloads.traces.core import TraceRow
from placer.workloads.traces.mapping import draw_betas

GAVEL_GRAPHS = {
    "ResNet-18": "gavel_resnet18",  # CIFAR-10
    "ResNet-50": "resnet50",  # ImageNet (PipeDream's profile)
    "Transformer": "gavel_transformer",  # Multi30k translation
    "LM": "gavel_lm",  # WikiText-2 LSTM
    "Recommendation": "gavel_recommendation",  # MovieLens-20M autoencoder
    "CycleGAN": "gavel_cyclegan",
    "A3C": "gavel_a3c",  # Atari Pong
}
_GAVEL_TYPE = re.compile(r"^(?P<model>[^()]+?)\s*(\(batch size (?P<batch>\d+)\))?$")


def convert_gavel(path: str | Path, beta_dist: BetaDistribution, rng: np.random.Generator) -> list[TraceRow]:
    """Replay rows of a Gavel trace, sorted by arrival; a line that is no Gavel job is one error naming it."""
    jobs = []
    for line_no, line in enumerate(read_text(path, what="trace", error=WorkloadError).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise WorkloadError(f"{path}:{line_no}: expected 7 tab-separated fields, got {len(fields)}")
        m = _GAVEL_TYPE.match(fields[0].strip())
        if not m or m["model"] not in GAVEL_GRAPHS:
            raise WorkloadError(f"{path}:{line_no}: unknown job type {fields[0]!r} (known models: {', '.join(GAVEL_GRAPHS)})")
        try:
            steps, arrival = int(fields[4]), float(fields[5])
        except ValueError:
            raise WorkloadError(f"{path}:{line_no}: total_steps and arrival_time must be numbers") from None
        jobs.append((arrival, GAVEL_GRAPHS[m["model"]] + (f"@{m['batch']}" if m["batch"] else ""), max(1, steps)))
    if not jobs:
        raise WorkloadError(f"{path}: trace has no jobs")
    betas = draw_betas(beta_dist, rng, len(jobs))
    return sorted((TraceRow(a, g, b, s) for (a, g, s), b in zip(jobs, betas, strict=True)), key=lambda r: r.arrival_s)
