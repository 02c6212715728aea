"""Typed configuration of the placement environment (read once, at the edge)."""

from __future__ import annotations

from dataclasses import dataclass

PLACEMENT_RULES = ("first_fit", "best_fit", "spread")


@dataclass(frozen=True)
class EnvConfig:
    """Keyword arguments of :class:`envs.env.ClusterPlacementEnv`.

    clusters: preset names or TOML paths (or one name); each episode draws one uniformly (one policy for several
    clusters). graphs: shipped names or JSON paths.
    beta_dists: one distribution, or a mix: each episode draws one of them uniformly.
    load: offered load; arrival: ``poisson`` or ``fixed``; episode_jobs: arrivals per episode.
    max_degree: largest partitioning degree; rules: the placement choices the policy picks from.
    reward: ``acceptance`` (+1/-1 per job, PAC-ML's) or ``work`` (+/- the job's sequential
    JCT over the mix's mean: throughput-aware).
    strategy: the cost model's (``auto``: fastest data x tensor x pipeline split; ``sipml``: PAC-ML's
    op splitting; see :mod:`placer.cost`).
    queue: the waiting queue (:mod:`placer.sim.queueing`: ``none`` for the loss system, ``edf-bf`` ...);
    one step is then one offer of a waiting job, and action 0 holds it. size: job length spread
    (:class:`placer.workloads.generator.SizeDistribution`: ``const`` or ``loguniform:LO:HI``). structure:
    the stream's structure (:mod:`placer.workloads.structure`: ``iid``, ``daily``, ``sweeps``, ``recurring``,
    ``replay:philly``, joined by ``+``). All three take one spec or several (each episode draws one).
    history: add the ``history`` observation (:mod:`envs.observation`: arrival rates, recurrence).
    max_nodes / max_edges: padding limits of the graph part (forward ops and forward edges); a
    graph over a limit is an error, never truncated. max_groups: rows of the cluster part (any
    cluster fits: servers are grouped beyond it).
    """

    clusters: tuple[str, ...] = ("pacml",)
    graphs: tuple[str, ...] = ("alexnet", "vgg16", "resnet18", "squeezenet1_0", "gnmt")
    beta_dists: tuple[str, ...] = ("A", "B", "C", "D")
    load: float = 0.9
    arrival: str = "poisson"
    episode_jobs: int = 256
    max_degree: int = 16
    rules: tuple[str, ...] = PLACEMENT_RULES
    reward: str = "acceptance"
    strategy: str = "auto"
    queue: str | tuple[str, ...] = "none"
    size: str | tuple[str, ...] = "const"
    structure: str | tuple[str, ...] = "iid"
    history: bool = False
    max_nodes: int = 512
    max_edges: int = 1024
    max_groups: int = 64
