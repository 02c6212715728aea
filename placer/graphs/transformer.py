"""Analytic GPT-style transformer job graphs (no torch): FLOPs and bytes per op, roofline times.

``transformer_graph(layers=40, hidden=1536, heads=16, seq_len=1024, batch_size=8, vocab=51200)``
builds one training iteration of a decoder with ``layers`` pre-norm blocks. Per block, forward
ops and FLOPs (``b`` batch, ``s`` sequence, ``h`` hidden, ``f = 4h``; a multiply-add is 2 FLOPs)::

    ln1 -> qkv (2bs h 3h) -> scores (2b s^2 h) -> softmax -> context (2b s^2 h) -> proj (2bs h^2)
        -> add (residual) -> ln2 -> fc1 (2bs h f) -> gelu -> fc2 (2bs f h) -> add (residual)

plus a token embedding, a final norm, an untied output layer (2bs h V) and the loss. Weight
matmuls are ``aten.addmm``, attention matmuls ``aten.bmm`` and the embedding
``aten.embedding``, so :mod:`placer.cost.tensor_parallel` splits the graph as Megatron does.
Each op takes ``max(FLOPs / matmul rate, bytes / (bandwidth x 0.7))`` on ``device`` in
``precision`` (:mod:`placer.cluster.devices`); the backward op takes twice its forward. Parameters are
fp32 bytes (4 per parameter); activations are in ``precision``.
"""

from __future__ import annotations

import networkx as nx

from placer.cluster.devices import BYTES_PER_ELEMENT, device_model
from placer.graphs.backward import training_graph
from placer.graphs.job_graph import JobGraph


def transformer_graph(
    *,
    layers: int,
    hidden: int,
    heads: int,
    seq_len: int,
    batch_size: int,
    vocab: int,
    device: str = "A100-80GB",
    precision: str = "bf16",
    name: str | None = None,
    iterations: int = 1000,
) -> JobGraph:
    ops = _Ops(device, precision, batch_size * seq_len)
    tokens, h, e = ops.tokens, hidden, ops.e
    ops.op("embed", "aten.embedding.default", 0.0, 2 * e * tokens * h, tokens * h, (vocab + seq_len) * h, ())
    x = "embed"
    for i in range(layers):
        x = _block(ops, f"l{i}.", x, batch_size, seq_len, hidden, heads)
    ops.elementwise("ln_f", "aten.native_layer_norm.default", (x,), tokens * h, 2 * h)
    ops.matmul("lm_head", "ln_f", h, vocab)
    ops.elementwise("loss", "aten._log_softmax.default", ("lm_head",), tokens * vocab)
    return JobGraph(
        training_graph(ops.forward),
        name=name or f"gpt_{layers}l_{hidden}h",
        iterations=iterations,
        batch_size=batch_size,
        profiled_on=(device, precision),
        precision=precision,
        _owned=True,
    )


class _Ops:
    """The forward graph being built: ops timed by the roofline of ``device`` in ``precision``, over ``tokens`` tokens."""

    def __init__(self, device: str, precision: str, tokens: int) -> None:
        self.model, self.precision, self.tokens = device_model(device), precision, tokens
        self.e = BYTES_PER_ELEMENT[precision]
        self.forward = nx.DiGraph()

    def op(self, node: str, kind: str, flops: float, bytes_moved: float, out_elements: float, params: float, inputs: tuple[str, ...]):
        model = self.model
        seconds = max(flops / model.matmul_rate(self.precision), bytes_moved / (model.memory_bandwidth_Bps * model.bandwidth_efficiency))
        self.forward.add_node(
            node,
            name=kind,
            compute_s=seconds,
            backward_compute_s=2 * seconds,
            flops=flops,
            backward_flops=2 * flops,
            param_bytes=4.0 * params,
            activation_bytes=out_elements * self.e,
        )
        for src in inputs:
            self.forward.add_edge(src, node, tensor_bytes=self.forward.nodes[src]["activation_bytes"])

    def matmul(self, node, src, n_in, n_out):
        tokens, e = self.tokens, self.e
        self.op(
            node,
            "aten.addmm.default",
            2 * tokens * n_in * n_out,
            e * (tokens * (n_in + n_out)) + 2 * n_in * n_out,
            tokens * n_out,
            n_in * n_out + n_out,
            (src,),
        )

    def elementwise(self, node, kind, inputs, elements, params=0.0):
        self.op(node, kind, 0.0, self.e * elements * (len(inputs) + 1), elements, params, inputs)


def _block(ops: _Ops, p: str, x: str, b: int, s: int, h: int, heads: int) -> str:
    """One pre-norm decoder block after op ``x``, its ops named ``p`` + op (module docstring); its last op."""
    tokens, e, f = ops.tokens, ops.e, 4 * h
    ops.elementwise(p + "ln1", "aten.native_layer_norm.default", (x,), tokens * h, 2 * h)
    ops.matmul(p + "qkv", p + "ln1", h, 3 * h)
    ops.op(
        p + "scores",
        "aten.bmm.default",
        2 * b * s * s * h,
        e * (2 * tokens * h + b * heads * s * s),
        b * heads * s * s,
        0.0,
        (p + "qkv",),
    )
    ops.elementwise(p + "softmax", "aten._softmax.default", (p + "scores",), b * heads * s * s)
    ops.op(
        p + "context",
        "aten.bmm.default",
        2 * b * s * s * h,
        e * (b * heads * s * s + 2 * tokens * h),
        tokens * h,
        0.0,
        (p + "softmax", p + "qkv"),
    )
    ops.matmul(p + "proj", p + "context", h, h)
    ops.elementwise(p + "add1", "aten.add.Tensor", (x, p + "proj"), tokens * h)
    ops.elementwise(p + "ln2", "aten.native_layer_norm.default", (p + "add1",), tokens * h, 2 * h)
    ops.matmul(p + "fc1", p + "ln2", h, f)
    ops.elementwise(p + "gelu", "aten.gelu.default", (p + "fc1",), tokens * f)
    ops.matmul(p + "fc2", p + "gelu", f, h)
    ops.elementwise(p + "add2", "aten.add.Tensor", (p + "add1", p + "fc2"), tokens * h)
    return p + "add2"
