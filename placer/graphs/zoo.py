"""Transformer job graphs shipped in ``data/graphs/`` (needs the ``torch`` extra and ``transformers``).

    python -m placer.graphs.zoo data/graphs

Each factory returns ``(module, example_inputs)`` with random weights (nothing is downloaded);
usable with ``placer import torch placer.graphs.zoo:gpt2_small --out g.json``. Batch sizes and
sequence lengths are typical training settings; attention is the eager implementation so every
matmul is an explicit op in the graph.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _ids(batch: int, seq: int, vocab: int):
    import torch

    return (torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0)),)


def gpt2_small():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(use_cache=False, attn_implementation="eager")  # 124M parameters, 12 layers
    return GPT2LMHeadModel(config).eval(), _ids(8, 1024, config.vocab_size)


def gpt2_medium():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_embd=1024, n_layer=24, n_head=16, use_cache=False, attn_implementation="eager")  # 355M
    return GPT2LMHeadModel(config).eval(), _ids(4, 1024, config.vocab_size)


def bert_base():
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(attn_implementation="eager")  # 110M parameters, 12 layers
    return BertForMaskedLM(config).eval(), _ids(16, 512, config.vocab_size)


def llama_850m():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=32000,
        max_position_embeddings=4096,
        use_cache=False,
        attn_implementation="eager",
    )  # a Llama-style decoder: TinyLlama widths, 16 layers, 0.85B parameters
    return LlamaForCausalLM(config).eval(), _ids(1, 4096, config.vocab_size)


MODELS = {"gpt2_small": gpt2_small, "gpt2_medium": gpt2_medium, "bert_base": bert_base, "llama_850m": llama_850m}


def main(out: Path) -> None:
    from placer.graphs.torch_import import export_models

    for graph in export_models(MODELS, out):
        flops = graph.forward_flops
        assert flops is not None  # torch_import counts every op's FLOPs
        print(
            f"{graph.name}: {graph.num_ops} ops, {flops / 1e12:.2f} TFLOP forward, "
            f"{graph.sequential_iteration_s:.3f} s per iteration on an A100",
            flush=True,
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/graphs"))
