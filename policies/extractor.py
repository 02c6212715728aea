"""SB3 features extractor: job graph (GNN) + job + cluster server groups -> context; options kept as rows."""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from placer.envs.observation import EDGE_FEATURES, GRAPH_KEYS, JOB_EXTRAS, NODE_FEATURES, GraphTable
from placer.policies.gnn import GraphEncoder


class PlacementExtractor(BaseFeaturesExtractor):
    """Maps the ``Dict`` observation of :mod:`placer.envs.observation` to (B, features_dim).

    The output is ``[context (B, context_dim), options (B, O * F)]``: the context joins the graph
    encoding (B, 2 * hidden), the job features through an MLP (B, 32), the server groups as a set
    (per-group MLP, masked mean and max: B, 64) and the cluster features
    (B, 3); the options table (O rows of F features) is passed through flattened, for
    :class:`placer.policies.scorer.OptionScorer` to score row by row. With a ``resize`` observation (an elastic env) one more
    feature follows the options, the offer's resize flag (B, 1), for the scorer's keep head. Only ``F`` and the feature
    sizes fix weight shapes: padding limits, cluster size and even ``O`` do not.

    The observation names its graph by id in ``graphs`` (:class:`placer.envs.observation.GraphTable`), whose
    arrays are held here once (buffers outside the state dict, so policy files hold weights only);
    each distinct graph of a batch is encoded once. Without a table, only :meth:`forward_with_graph`
    (the caller encodes with :meth:`encode_arrays`) works.
    """

    def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64, rounds: int = 3, graphs: GraphTable | None = None) -> None:
        spaces = observation_space.spaces
        self.num_options, self.option_features = _shape(spaces["options"])
        self.context_dim = 2 * hidden + 32 + 64 + _shape(spaces["cluster"])[0]
        self.resize_flag = "resize" in spaces
        options = self.num_options * self.option_features
        super().__init__(observation_space, features_dim=self.context_dim + options + self.resize_flag)
        self.graph = GraphEncoder(NODE_FEATURES, EDGE_FEATURES, hidden, rounds)
        self.extras = [key for key in JOB_EXTRAS if key in spaces]  # the job MLP reads these beside the job (placer.envs.observation)
        job_inputs = _shape(spaces["job"])[0] + sum(_shape(spaces[key])[0] for key in self.extras)
        self.job = nn.Sequential(nn.Linear(job_inputs, 32), nn.ReLU())
        self.dedupe_graphs = True  # benchmarks switch it off to measure what it saves
        self.rollout_cache: dict[int, torch.Tensor] | None = None  # graph id -> encoding; set by training while the weights stay fixed
        self.group = nn.Sequential(nn.Linear(_shape(spaces["groups"])[1], 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.set_graphs(graphs)

    def set_graphs(self, graphs: GraphTable | None) -> None:
        """Hold ``graphs``' arrays (the ids observations name), on the module's device."""
        device = next(self.parameters()).device
        for key in GRAPH_KEYS:
            value = None if graphs is None else torch.as_tensor(graphs.arrays[key], device=device)
            self.register_buffer(f"graph_{key}", value, persistent=False)
        self.num_graphs = 0 if graphs is None else len(graphs)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.forward_with_graph(self.encode_graphs(obs["graph"]), obs)

    def forward_with_graph(self, graph: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The features given the graph encodings (B, 2 * hidden); ``obs["graph"]`` is not read."""
        mask = obs["group_mask"].unsqueeze(-1)
        per_group = self.group(obs["groups"]) * mask
        mean = per_group.sum(1) / mask.sum(1).clamp(min=1)
        maximum = per_group.masked_fill(mask < 0.5, -1.0).amax(1)
        job = torch.cat([obs["job"], *(obs[key] for key in self.extras)], dim=1) if self.extras else obs["job"]
        flag = [obs["resize"][:, :1]] if self.resize_flag else []
        return torch.cat([graph, self.job(job), mean, maximum, obs["cluster"], obs["options"].flatten(1), *flag], dim=1)

    def encode_arrays(self, arrays: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, 2 * hidden) encodings of B padded graphs (:data:`placer.envs.observation.GRAPH_KEYS` arrays, float)."""
        return self.graph(*(arrays[k] for k in GRAPH_KEYS))

    def encode_graphs(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, 2 * hidden) encodings of the graphs with ids ``ids`` (B or (B, 1), any dtype): each distinct one once."""
        if self.num_graphs == 0:
            raise RuntimeError("this extractor holds no graph table: encode with encode_arrays and call forward_with_graph")
        ids = ids.reshape(-1).long()
        if self.rollout_cache is not None and not torch.is_grad_enabled():
            return self._cached(ids, self.rollout_cache)
        if not self.dedupe_graphs:
            return self._encode(ids)
        unique, inverse = torch.unique(ids, return_inverse=True)
        return self._encode(unique)[inverse]

    def _encode(self, ids: torch.Tensor) -> torch.Tensor:
        return self.graph(*(getattr(self, f"graph_{k}")[ids] for k in GRAPH_KEYS))

    def _cached(self, ids: torch.Tensor, cache: dict[int, torch.Tensor]) -> torch.Tensor:
        """Encodings looked up by id in ``cache`` (rollouts: no gradients, fixed weights), the missing ones encoded once."""
        rows = ids.tolist()
        missing = sorted(set(rows) - set(cache))
        if missing:
            encoded = self._encode(torch.tensor(missing, device=ids.device))
            cache.update(zip(missing, encoded, strict=True))
        return torch.stack([cache[row] for row in rows])


def _shape(space: gym.Space) -> tuple[int, ...]:
    """The shape of one of the observation's boxes (gymnasium types every space's shape as optional)."""
    if space.shape is None:
        raise ValueError(f"observation space {space!r} has no shape")
    return space.shape
