"""Graph encoder: message passing with edge features over a padded batch of job graphs."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GINEConv


class GraphEncoder(nn.Module):
    """Encode a batch of padded graphs into (B, 2 * hidden) vectors (masked mean and max).

    Inputs: ``nodes`` (B, N, F) float, ``node_mask`` (B, N), ``edge_index`` (B, 2, E) node
    positions, ``edges`` (B, E, Fe), ``edge_mask`` (B, E). Padding is dropped and the batch is
    run as one disjoint graph (no per-sample loop): ``rounds`` GINE convolutions with residuals.
    """

    def __init__(self, node_features: int, edge_features: int, hidden: int = 64, rounds: int = 3) -> None:
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Sequential(nn.Linear(node_features, hidden), nn.ReLU())
        self.convs = nn.ModuleList(
            GINEConv(nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)), edge_dim=edge_features)
            for _ in range(rounds)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(rounds))

    @property
    def output_dim(self) -> int:
        return 2 * self.hidden

    def forward(self, nodes, node_mask, edge_index, edges, edge_mask) -> torch.Tensor:
        batch, n, _ = nodes.shape
        keep = node_mask.reshape(-1) > 0.5
        new_index = torch.cumsum(keep.long(), 0) - 1  # padded position -> compact position
        x = self.embed(nodes.reshape(batch * n, -1)[keep])
        offsets = (torch.arange(batch, device=nodes.device) * n).view(batch, 1, 1)
        flat = (edge_index.long() + offsets).permute(1, 0, 2).reshape(2, -1)
        edge_keep = edge_mask.reshape(-1) > 0.5
        index = new_index[flat[:, edge_keep]]
        attrs = edges.reshape(-1, edges.shape[-1])[edge_keep]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = norm(x + torch.relu(conv(x, index, attrs)))
        graph_of = torch.arange(batch, device=nodes.device).repeat_interleave(n)[keep]
        counts = torch.zeros(batch, device=nodes.device).index_add_(0, graph_of, torch.ones_like(graph_of, dtype=x.dtype))
        mean = torch.zeros(batch, self.hidden, device=nodes.device).index_add_(0, graph_of, x) / counts.clamp(min=1).unsqueeze(1)
        maximum = torch.full((batch, self.hidden), -torch.inf, device=nodes.device)
        maximum = maximum.scatter_reduce(0, graph_of.unsqueeze(1).expand_as(x), x, reduce="amax")
        maximum = torch.where(torch.isfinite(maximum), maximum, torch.zeros_like(maximum))
        return torch.cat([mean, maximum], dim=1)
