"""SB3 features extractor: job graph (GNN) + job + cluster server groups -> context; options kept as rows."""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from policies.gnn import GraphEncoder


class PlacementExtractor(BaseFeaturesExtractor):
    """Maps the ``Dict`` observation of :mod:`envs.observation` to (B, features_dim).

    The output is ``[context (B, context_dim), options (B, O * F)]``: the context joins the graph
    encoding (B, 2 * hidden), the job features through an MLP (B, 32), the server groups as a set
    (per-group MLP, masked mean and max: B, 64) and the cluster features
    (B, 3); the options table (O rows of F features) is passed through flattened, for
    :class:`policies.scorer.OptionScorer` to score row by row. Only ``F`` and the feature
    sizes fix weight shapes: padding limits, cluster size and even ``O`` do not.
    """

    def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64, rounds: int = 3) -> None:
        spaces = observation_space.spaces
        self.num_options, self.option_features = spaces["options"].shape
        self.context_dim = 2 * hidden + 32 + 64 + spaces["cluster"].shape[0]
        super().__init__(observation_space, features_dim=self.context_dim + self.num_options * self.option_features)
        self.graph = GraphEncoder(spaces["nodes"].shape[1], spaces["edges"].shape[1], hidden, rounds)
        self.history = "history" in spaces  # the job MLP reads the arrival history beside the job (envs.observation)
        job_inputs = spaces["job"].shape[0] + (spaces["history"].shape[0] if self.history else 0)
        self.job = nn.Sequential(nn.Linear(job_inputs, 32), nn.ReLU())
        self.dedupe_graphs = True  # benchmarks switch it off to measure what it saves
        self.rollout_cache: dict[tuple, torch.Tensor] | None = None  # set by training while the weights stay fixed
        self.group = nn.Sequential(nn.Linear(spaces["groups"].shape[1], 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.forward_with_graph(self.encode_graphs(obs), obs)

    def forward_with_graph(self, graph: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The features given the graph encodings (B, 2 * hidden); ``obs`` needs no graph arrays."""
        mask = obs["group_mask"].unsqueeze(-1)
        per_group = self.group(obs["groups"]) * mask
        mean = per_group.sum(1) / mask.sum(1).clamp(min=1)
        maximum = per_group.masked_fill(mask < 0.5, -1.0).amax(1)
        job = torch.cat([obs["job"], obs["history"]], dim=1) if self.history else obs["job"]
        return torch.cat([graph, self.job(job), mean, maximum, obs["cluster"], obs["options"].flatten(1)], dim=1)

    def encode_graphs(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, 2 * hidden): each distinct graph of the batch is encoded once and shared.

        A minibatch holds a few distinct graphs (the workload's), each many times; samples are
        grouped by a fingerprint of their graph arrays (sizes and sums of every part, and
        a position-weighted sum of the node features).
        """
        keys = ("nodes", "node_mask", "edge_index", "edges", "edge_mask")
        batch = obs["nodes"].shape[0]
        weights = torch.arange(1, obs["nodes"].shape[1] + 1, dtype=obs["nodes"].dtype, device=obs["nodes"].device)
        fingerprint = torch.stack(
            [obs[k].reshape(batch, -1).sum(1).to(obs["nodes"].dtype) for k in keys] + [(obs["nodes"].sum(2) * weights).sum(1)], dim=1
        )
        if self.rollout_cache is not None and not torch.is_grad_enabled():
            return self._cached(obs, keys, fingerprint)
        unique, inverse = torch.unique(fingerprint, dim=0, return_inverse=True)
        if len(unique) == batch or not self.dedupe_graphs:
            return self.graph(*(obs[k] for k in keys))
        first = torch.full((len(unique),), batch, dtype=torch.long, device=inverse.device)
        first = first.scatter_reduce(0, inverse, torch.arange(batch, device=inverse.device), reduce="amin")
        encoded = self.graph(*(obs[k][first] for k in keys))
        return encoded[inverse]

    def _cached(self, obs: dict[str, torch.Tensor], keys: tuple[str, ...], fingerprint: torch.Tensor) -> torch.Tensor:
        """Encodings looked up by fingerprint in ``rollout_cache`` (rollouts: no gradients, fixed weights)."""
        rows = [tuple(row) for row in fingerprint.tolist()]
        first: dict[tuple, int] = {}
        for i, row in enumerate(rows):
            if row not in self.rollout_cache:
                first.setdefault(row, i)
        if first:
            index = torch.tensor(list(first.values()))
            encoded = self.graph(*(obs[k][index] for k in keys))
            for row, vector in zip(first, encoded, strict=True):
                self.rollout_cache[row] = vector
        return torch.stack([self.rollout_cache[row] for row in rows])
