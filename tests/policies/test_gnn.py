"""The graph encoder's GINE layer against torch-geometric's ``GINEConv`` (the reference, installed with the tests): the
same weights from the same seed, and the same outputs and gradients, bit for bit."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from placer.policies.gnn import GINEConv, GraphEncoder

reference = pytest.importorskip("torch_geometric.nn")


def _mlp(hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))


def _graph(nodes: int, edges: int, hidden: int, edge_dim: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(nodes, hidden, generator=generator, requires_grad=True)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)  # repeated targets: the sum's order matters
    return x, edge_index, torch.rand(edges, edge_dim, generator=generator)


@pytest.mark.parametrize(("hidden", "edge_dim", "nodes", "edges"), [(8, 1, 5, 12), (64, 1, 300, 700), (16, 3, 40, 0)])
def test_gine_is_torch_geometric_s_bit_for_bit(hidden, edge_dim, nodes, edges):
    torch.manual_seed(7)
    ours = GINEConv(_mlp(hidden), edge_dim)
    torch.manual_seed(7)
    theirs = reference.GINEConv(_mlp(hidden), edge_dim=edge_dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), theirs.state_dict().values(), strict=True))
    x, edge_index, edge_attr = _graph(nodes, edges, hidden, edge_dim, seed=hidden)
    out = ours(x, edge_index, edge_attr)
    expected = theirs(x, edge_index, edge_attr)
    assert torch.equal(out, expected)
    (grad,) = torch.autograd.grad(out.square().sum(), x)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), x)
    assert torch.equal(grad, expected_grad)


def test_gine_on_a_hand_built_graph():
    # two nodes, one edge 0 -> 1 with feature 1; identity-like weights make each term visible
    conv = GINEConv(nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 1)), 1)
    with torch.no_grad():
        for layer in (conv.nn[0], conv.nn[2], conv.lin):
            layer.weight.fill_(1.0)
            layer.bias.zero_()
        conv.lin.bias.fill_(-5.0)  # the message relu(x_0 + 1 - 5) = relu(-2) = 0 at first
    x = torch.tensor([[2.0], [3.0]])
    edge_index, edge_attr = torch.tensor([[0], [1]]), torch.tensor([[1.0]])
    assert conv(x, edge_index, edge_attr).tolist() == [[2.0], [3.0]]  # no message: each node keeps (1 + 0) x
    with torch.no_grad():
        conv.lin.bias.zero_()
    assert conv(x, edge_index, edge_attr).tolist() == [[2.0], [6.0]]  # node 1: 3 + relu(2 + 1)


def test_the_encoder_draws_its_weights_as_with_torch_geometric():
    torch.manual_seed(3)
    ours = GraphEncoder(8, 1, hidden=16, rounds=2).state_dict()
    torch.manual_seed(3)  # the encoder's draws in its order: the embedding, then each round's layer
    embed = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
    convs = [reference.GINEConv(_mlp(16), edge_dim=1) for _ in range(2)]
    assert torch.equal(ours["embed.0.weight"], embed[0].weight)
    for i, conv in enumerate(convs):
        for name, value in conv.state_dict().items():
            assert torch.equal(ours[f"convs.{i}.{name}"], value), name


def test_a_fresh_policy_draws_the_weights_it_drew_with_torch_geometric(monkeypatch):
    # the whole network as training builds it, SB3's orthogonal initialisation included (it passes torch-geometric's
    # Linear by, so it must pass the edge projection by too): a recipe's fresh weights are what they were
    from placer.envs.config import EnvConfig
    from placer.envs.observation import GraphTable
    from placer.policies import gnn
    from placer.policies.model import build_policy

    env = EnvConfig.model_validate({"workload": {"graphs": ["alexnet", "resnet18"]}, "max_nodes": 128, "max_edges": 256})

    def weights() -> dict[str, torch.Tensor]:
        torch.manual_seed(11)
        return build_policy(env, 16, 2, [32], GraphTable.from_config(env)).state_dict()

    ours = weights()
    monkeypatch.setattr(gnn, "GINEConv", lambda mlp, edge_dim: reference.GINEConv(mlp, edge_dim=edge_dim))
    theirs = weights()
    assert list(ours) == list(theirs)
    assert [name for name in ours if not torch.equal(ours[name], theirs[name])] == []
