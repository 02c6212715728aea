"""SB3 features extractor: job graph (GNN) + job + cluster devices -> context; options kept as rows."""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from policies.gnn import GraphEncoder


class PlacementExtractor(BaseFeaturesExtractor):
    """Maps the ``Dict`` observation of :mod:`envs.observation` to (B, features_dim).

    The output is ``[context (B, context_dim), options (B, O * F)]``: the context joins the graph
    encoding (B, 2 * hidden), the job features through an MLP (B, 32), the devices as a set
    (per-device MLP, masked mean and max: B, 64; any cluster size) and the cluster features
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
        self.job = nn.Sequential(nn.Linear(spaces["job"].shape[0], 32), nn.ReLU())
        self.device = nn.Sequential(nn.Linear(spaces["devices"].shape[1], 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        graph = self.graph(obs["nodes"], obs["node_mask"], obs["edge_index"], obs["edges"], obs["edge_mask"])
        mask = obs["device_mask"].unsqueeze(-1)
        per_device = self.device(obs["devices"]) * mask
        mean = per_device.sum(1) / mask.sum(1).clamp(min=1)
        maximum = per_device.masked_fill(mask < 0.5, -1.0).amax(1)
        return torch.cat([graph, self.job(obs["job"]), mean, maximum, obs["cluster"], obs["options"].flatten(1)], dim=1)
