"""SB3 features extractor: job graph (GNN) + job + placement options + cluster devices."""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from policies.gnn import GraphEncoder


class PlacementExtractor(BaseFeaturesExtractor):
    """Maps the ``Dict`` observation of :mod:`envs.observation` to a (B, features_dim) vector.

    Parts: the graph encoding (B, 2 * hidden); the job features through an MLP (B, 32); the
    devices as a set (per-device MLP, masked mean and max: B, 64), so any cluster size works;
    the cluster features (B, 3); and the options table flattened (B, O * 5), which lines up
    with the action logits. Only ``O`` (max_degree x rules) fixes a weight shape: padding
    limits and cluster size do not.
    """

    def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64, rounds: int = 3) -> None:
        spaces = observation_space.spaces
        num_options, option_features = spaces["options"].shape
        device_features = spaces["devices"].shape[1]
        job_features = spaces["job"].shape[0]
        cluster_features = spaces["cluster"].shape[0]
        graph_dim = 2 * hidden
        features = graph_dim + 32 + 64 + cluster_features + num_options * option_features
        super().__init__(observation_space, features_dim=features)
        self.graph = GraphEncoder(spaces["nodes"].shape[1], spaces["edges"].shape[1], hidden, rounds)
        self.job = nn.Sequential(nn.Linear(job_features, 32), nn.ReLU())
        self.device = nn.Sequential(nn.Linear(device_features, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        graph = self.graph(obs["nodes"], obs["node_mask"], obs["edge_index"], obs["edges"], obs["edge_mask"])
        mask = obs["device_mask"].unsqueeze(-1)
        per_device = self.device(obs["devices"]) * mask
        mean = per_device.sum(1) / mask.sum(1).clamp(min=1)
        maximum = per_device.masked_fill(mask < 0.5, -1.0).amax(1)
        return torch.cat([graph, self.job(obs["job"]), mean, maximum, obs["cluster"], obs["options"].flatten(1)], dim=1)
