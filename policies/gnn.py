"""Graph encoder: message passing with edge features over a padded batch of job graphs.

The convolution is GINE (Hu et al., 2020) as torch-geometric's ``GINEConv(mlp, edge_dim=...)`` computes it, with its
weight names, its initialisation's draws and its operations in its order, so weights, outputs and gradients are those of
torch-geometric's bit for bit (``tests/policies/test_gnn.py`` holds them equal): importing torch-geometric for this one
layer took 5 s of every training process's start.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class EdgeLinear(nn.Module):
    """torch-geometric's ``Linear`` (``weight`` (out, in), ``bias`` (out,), ``F.linear``), initialised by its formulas
    (the same draws; bounds ``sqrt(6 / ((1 + 5) * in))`` and ``1 / sqrt(in)``, as it writes them). Not a
    :class:`torch.nn.Linear`, as torch-geometric's is not: SB3's orthogonal initialisation passes it by."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            bound = math.sqrt(6 / ((1 + math.sqrt(5) ** 2) * self.in_features))
            self.weight.uniform_(-bound, bound)
            bias = 1.0 / math.sqrt(self.in_features)
            self.bias.uniform_(-bias, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


def _reset(module: nn.Module) -> None:
    """torch-geometric's ``reset``: the module's ``reset_parameters``, else each child's, depth first."""
    reset = getattr(module, "reset_parameters", None)
    if callable(reset):
        reset()
    else:
        for child in module.children():
            _reset(child)


class GINEConv(nn.Module):
    """``mlp(sum over edges j -> i of relu(x_j + lin(e_ji)) + (1 + eps) x_i)``, eps fixed at 0 (a buffer).

    ``forward(x (N, H), edge_index (2, E) source and target rows, edge_attr (E, edge_dim)) -> (N, H')``."""

    eps: torch.Tensor

    def __init__(self, mlp: nn.Sequential, edge_dim: int) -> None:
        super().__init__()
        self.nn = mlp
        self.register_buffer("eps", torch.empty(1))
        self.lin = EdgeLinear(edge_dim, _first_linear(mlp[0]).in_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset(self.nn)
        self.eps.data.fill_(0.0)
        self.lin.reset_parameters()

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        messages = (x.index_select(0, edge_index[0]) + self.lin(edge_attr)).relu()
        target = edge_index[1].view(-1, 1).expand_as(messages)
        summed = x.new_zeros(x.shape[0], messages.shape[1]).scatter_add_(0, target, messages)
        return self.nn(summed + (1 + self.eps) * x)


def _first_linear(module: nn.Module) -> nn.Linear:
    """The MLP's first layer, whose input width the edge projection gives."""
    if not isinstance(module, nn.Linear):
        raise TypeError(f"the MLP's first layer must be a Linear, got {type(module).__name__}")
    return module


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
            GINEConv(nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)), edge_features)
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
