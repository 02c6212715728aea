"""The seven model families of Gavel's traces as PyTorch modules, imported with ``from_torch``.

    python -m placer.graphs.gavel_models data/graphs

Gavel's job types (stanford-futuredata/gavel, ``scheduler/job_table.py``) name a model and a task;
the networks below follow the reference implementations those jobs ran, with random weights:

- ``gavel_resnet18``: ResNet-18 for CIFAR-10 (3x3 stem, no max-pool, 32x32 images), batch 128;
- ``gavel_transformer``: the Transformer-base translation model (6 + 6 layers, d_model 512,
  8 heads, feed-forward 2048) on Multi30k (vocabularies 10,000, sentences of 32 tokens), batch 64;
- ``gavel_lm``: the PyTorch word-language-model LSTM on WikiText-2 (vocabulary 33,278, 2 layers of
  200 with 200-wide embeddings: the defaults of Gavel's ``language_modeling/main.py``, which its job
  table does not override; 35 steps unrolled), batch 20;
- ``gavel_recommendation``: the autoencoder recommender on MovieLens-20M (26,744 items,
  encoder 512-512-1024 and its mirror, SELU), batch 2,048;
- ``gavel_cyclegan``: CycleGAN on 256x256 images (two 9-block ResNet generators, two 70x70
  PatchGAN discriminators, both cycles), batch 1;
- ``gavel_a3c``: the A3C Atari agent (four 32-filter 3x3 stride-2 convolutions on 42x42 frames,
  an LSTM cell of 256, policy and value heads; 20 steps of rollout per update), batch 4.

Sizes not fixed by Gavel's job table (widths, vocabularies, sequence lengths) are the reference
implementations' defaults as named above. Recurrent layers are written as explicit gate matmuls so
each is an op with counted FLOPs. ResNet-50 maps to the shipped PipeDream ``resnet50``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))


class CifarResNet18(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        layers, cin = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [_BasicBlock(cin, cout, stride), _BasicBlock(cout, cout, 1)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(512, classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


class _Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x, memory):
        b, t, w = x.shape
        split = lambda y: y.view(b, -1, self.heads, w // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(memory)), split(self.v(memory))
        weights = torch.softmax(q @ k.transpose(-1, -2) / (w // self.heads) ** 0.5, dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, w))


class _TransformerLayer(nn.Module):
    def __init__(self, width: int, heads: int, ff: int, cross: bool) -> None:
        super().__init__()
        self.attend, self.norm1 = _Attention(width, heads), nn.LayerNorm(width)
        self.cross = _Attention(width, heads) if cross else None
        self.norm2 = nn.LayerNorm(width) if cross else None
        self.ff = nn.Sequential(nn.Linear(width, ff), nn.ReLU(), nn.Linear(ff, width))
        self.norm3 = nn.LayerNorm(width)

    def forward(self, x, memory=None):
        x = self.norm1(x + self.attend(x, x))
        if self.cross is not None:
            x = self.norm2(x + self.cross(x, memory))
        return self.norm3(x + self.ff(x))


class TranslationTransformer(nn.Module):
    def __init__(self, vocab: int = 10_000, width: int = 512, heads: int = 8, ff: int = 2048, layers: int = 6) -> None:
        super().__init__()
        self.source_embed, self.target_embed = nn.Embedding(vocab, width), nn.Embedding(vocab, width)
        self.encoder = nn.ModuleList(_TransformerLayer(width, heads, ff, cross=False) for _ in range(layers))
        self.decoder = nn.ModuleList(_TransformerLayer(width, heads, ff, cross=True) for _ in range(layers))
        self.generator = nn.Linear(width, vocab)

    def forward(self, source, target):
        memory = self.source_embed(source)
        for layer in self.encoder:
            memory = layer(memory)
        x = self.target_embed(target)
        for layer in self.decoder:
            x = layer(x, memory)
        return self.generator(x)


class _LSTMCell(nn.Module):
    """One LSTM step as two gate matmuls (input and hidden) and elementwise gates."""

    def __init__(self, cin: int, hidden: int) -> None:
        super().__init__()
        self.input, self.hidden = nn.Linear(cin, 4 * hidden), nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x, state):
        h, c = state
        i, f, g, o = (self.input(x) + self.hidden(h)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 33_278, width: int = 200, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.cells = nn.ModuleList(_LSTMCell(width, width) for _ in range(layers))
        self.decode = nn.Linear(width, vocab)

    def forward(self, tokens):  # (batch, steps)
        x = self.embed(tokens)
        zeros = torch.zeros(tokens.shape[0], x.shape[-1])
        for cell in self.cells:
            h, c, outputs = zeros, zeros, []
            for t in range(tokens.shape[1]):
                h, c = cell(x[:, t], (h, c))
                outputs.append(h)
            x = torch.stack(outputs, dim=1)
        return self.decode(x)


class AutoencoderRecommender(nn.Module):
    def __init__(self, items: int = 26_744, widths: tuple[int, ...] = (512, 512, 1024)) -> None:
        super().__init__()
        sizes = (items, *widths)
        down = [nn.Sequential(nn.Linear(a, b), nn.SELU()) for a, b in zip(sizes, sizes[1:], strict=False)]
        up = [nn.Sequential(nn.Linear(b, a), nn.SELU()) for a, b in zip(sizes, sizes[1:], strict=False)][::-1]
        self.net = nn.Sequential(*down, *up)

    def forward(self, ratings):
        return self.net(ratings)


def _resnet_generator(blocks: int = 9, width: int = 64) -> nn.Module:
    def conv(cin, cout, k, stride=1, pad=0):
        return [nn.Conv2d(cin, cout, k, stride, pad), nn.InstanceNorm2d(cout), nn.ReLU()]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c = 4 * width
            self.body = nn.Sequential(*conv(c, c, 3, pad=1), nn.Conv2d(c, c, 3, 1, 1), nn.InstanceNorm2d(c))

        def forward(self, x):
            return x + self.body(x)

    layers = conv(3, width, 7, pad=3) + conv(width, 2 * width, 3, 2, 1) + conv(2 * width, 4 * width, 3, 2, 1)
    layers += [Block() for _ in range(blocks)]
    layers += [nn.ConvTranspose2d(4 * width, 2 * width, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(2 * width), nn.ReLU()]
    layers += [nn.ConvTranspose2d(2 * width, width, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(width), nn.ReLU()]
    layers += [nn.Conv2d(width, 3, 7, 1, 3), nn.Tanh()]
    return nn.Sequential(*layers)


def _patch_discriminator(width: int = 64) -> nn.Module:
    layers, cin = [nn.Conv2d(3, width, 4, 2, 1), nn.LeakyReLU(0.2)], width
    for cout, stride in ((2 * width, 2), (4 * width, 2), (8 * width, 1)):
        layers += [nn.Conv2d(cin, cout, 4, stride, 1), nn.InstanceNorm2d(cout), nn.LeakyReLU(0.2)]
        cin = cout
    return nn.Sequential(*layers, nn.Conv2d(cin, 1, 4, 1, 1))


class CycleGAN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.to_b, self.to_a = _resnet_generator(), _resnet_generator()
        self.judge_a, self.judge_b = _patch_discriminator(), _patch_discriminator()

    def forward(self, a, b):
        fake_b, fake_a = self.to_b(a), self.to_a(b)
        return self.to_a(fake_b), self.to_b(fake_a), self.judge_a(fake_a), self.judge_b(fake_b), self.judge_a(a), self.judge_b(b)


class A3CAgent(nn.Module):
    def __init__(self, actions: int = 6, hidden: int = 256, steps: int = 20) -> None:
        super().__init__()
        layers, cin = [], 1
        for _ in range(4):
            layers += [nn.Conv2d(cin, 32, 3, 2, 1), nn.ELU()]
            cin = 32
        self.features, self.steps = nn.Sequential(*layers), steps
        self.cell = _LSTMCell(32 * 3 * 3, hidden)
        self.policy, self.value = nn.Linear(hidden, actions), nn.Linear(hidden, 1)

    def forward(self, frames):  # (batch, steps, 1, 42, 42)
        h = c = torch.zeros(frames.shape[0], self.cell.hidden.in_features)
        logits, values = [], []
        for t in range(self.steps):
            h, c = self.cell(self.features(frames[:, t]).flatten(1), (h, c))
            logits.append(self.policy(h))
            values.append(self.value(h))
        return torch.stack(logits), torch.stack(values)


def _tokens(shape: tuple[int, ...], vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(0))


def gavel_resnet18():
    return CifarResNet18().eval(), (torch.randn(128, 3, 32, 32),)


def gavel_transformer():
    return TranslationTransformer().eval(), (_tokens((64, 32), 10_000), _tokens((64, 32), 10_000))


def gavel_lm():
    return LSTMLanguageModel().eval(), (_tokens((20, 35), 33_278),)


def gavel_recommendation():
    return AutoencoderRecommender().eval(), (torch.rand(2048, 26_744),)


def gavel_cyclegan():
    return CycleGAN().eval(), (torch.randn(1, 3, 256, 256), torch.randn(1, 3, 256, 256))


def gavel_a3c():
    return A3CAgent().eval(), (torch.randn(4, 20, 1, 42, 42),)


MODELS = {
    "gavel_resnet18": gavel_resnet18,
    "gavel_transformer": gavel_transformer,
    "gavel_lm": gavel_lm,
    "gavel_recommendation": gavel_recommendation,
    "gavel_cyclegan": gavel_cyclegan,
    "gavel_a3c": gavel_a3c,
}


def main(out: Path) -> None:
    from placer.graphs.torch_import import export_models

    for graph in export_models(MODELS, out):
        milliseconds = graph.sequential_iteration_s * 1e3
        flops = graph.forward_flops
        assert flops is not None  # torch_import counts every op's FLOPs
        print(f"{graph.name}: {graph.num_ops} ops, {flops / 1e9:.1f} GFLOP forward, {milliseconds:.1f} ms per iteration")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/graphs"))
