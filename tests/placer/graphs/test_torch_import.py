import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from placer import from_torch  # noqa: E402
from placer.cluster.devices import DEVICE_MODELS  # noqa: E402
from placer.common.errors import PlacerError  # noqa: E402


def test_hand_worked_linear_relu():
    # Linear(4 -> 3) on a (2, 4) input, then ReLU. Linear: 2 * 2 * 4 * 3 = 48 FLOPs; parameters
    # (12 + 3) x 4 bytes = 60; output 2 x 3 x 4 = 24 bytes; bytes moved = x 32 + W 48 + b 12 + out 24.
    graph = from_torch(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.ones(2, 4),), name="toy")
    g = graph.graph
    assert graph.num_ops == 4 and graph.forward_flops == 48.0
    (linear,) = [v for v, d in g.nodes(data=True) if d["pass"] == "forward" and "linear" in d["name"]]
    (relu,) = [v for v, d in g.nodes(data=True) if d["pass"] == "forward" and "relu" in d["name"]]
    a100 = DEVICE_MODELS["A100-80GB"]
    node = g.nodes[linear]
    assert (node["flops"], node["param_bytes"], node["activation_bytes"]) == (48.0, 60.0, 24.0)
    assert node["compute_s"] == pytest.approx(a100.op_seconds(48, 116))
    backward = g.nodes["bw:" + linear[3:]]
    assert backward["flops"] == 96.0 and backward["compute_s"] == pytest.approx(a100.op_seconds(96, 232))
    assert g.edges[linear, relu]["tensor_bytes"] == 24.0
    assert g.edges["bw:" + relu[3:], "bw:" + linear[3:]]["tensor_bytes"] == 24.0
    assert g.nodes[relu]["param_bytes"] == 0.0


def test_views_move_no_bytes():
    class Flatten(torch.nn.Module):
        def forward(self, x):
            return x.view(-1) * 2

    graph = from_torch(Flatten(), (torch.ones(3, 5),))
    views = [d for _, d in graph.graph.nodes(data=True) if d["pass"] == "forward" and "view" in d["name"]]
    assert views and all(d["compute_s"] == 0.0 for d in views)


def _transformers():
    return pytest.importorskip("transformers")


def _models(attn: str):
    tf = _transformers()
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 32))
    gpt2 = tf.GPT2LMHeadModel(
        tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=64, use_cache=False, attn_implementation=attn)
    )
    bert = tf.BertModel(
        tf.BertConfig(
            num_hidden_layers=2, hidden_size=128, num_attention_heads=4, intermediate_size=256, vocab_size=1000, attn_implementation=attn
        )
    )
    vit = tf.ViTModel(
        tf.ViTConfig(
            num_hidden_layers=2,
            hidden_size=128,
            num_attention_heads=4,
            intermediate_size=256,
            image_size=64,
            patch_size=16,
            attn_implementation=attn,
        )
    )
    return {"gpt2": (gpt2.eval(), (ids,)), "bert": (bert.eval(), (ids,)), "vit": (vit.eval(), (torch.randn(2, 3, 64, 64),))}


def _eager_flops(model, inputs):
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*inputs)
    return counter.get_total_flops()


@pytest.mark.parametrize("name", ["gpt2", "bert", "vit"])
def test_third_party_models_match_the_flop_counter(name):
    model, inputs = _models("eager")[name]
    graph = from_torch(model, inputs, name=name)
    assert graph.forward_flops == pytest.approx(_eager_flops(model, inputs), rel=0.05)
    assert graph.num_ops > 100
    assert graph.parameter_bytes == pytest.approx(sum(p.numel() * 4 for p in model.parameters()), rel=0.05)


def test_fused_attention_work_is_counted():
    # Eager CPU SDPA hides its matmuls from FlopCounterMode; the exported graph counts them, so
    # the SDPA model's total equals the eager-attention model's.
    eager_model, inputs = _models("eager")["gpt2"]
    sdpa_model, _ = _models("sdpa")["gpt2"]
    sdpa_graph = from_torch(sdpa_model, inputs)
    assert sdpa_graph.forward_flops == pytest.approx(from_torch(eager_model, inputs).forward_flops)
    assert sdpa_graph.forward_flops > _eager_flops(sdpa_model, inputs)


def test_models_that_do_not_export_get_a_clear_error():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(PlacerError, match="does not export with these inputs"):
        from_torch(DataDependent(), (torch.ones(3),))
    with pytest.raises(PlacerError, match="does not export"):
        from_torch(torch.nn.Linear(4, 3), (torch.ones(2, 5),))
    with pytest.raises(PlacerError, match="unknown device type"):
        from_torch(torch.nn.Linear(4, 3), (torch.ones(2, 4),), device_type="TPU")


def test_cli_import_torch(tmp_path):
    (tmp_path / "mymodels.py").write_text(
        textwrap.dedent("""
        import torch
        def mlp():
            return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        def with_inputs():
            return mlp(), (torch.randn(4, 64),)
    """)
    )

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "placer", "import", "torch", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300
        )

    ok = run("mymodels:mlp", "--input-shape", "32,64", "--out", "g.json")
    assert ok.returncode == 0, ok.stderr
    from placer import load_job_graph

    assert load_job_graph(tmp_path / "g.json").forward_flops == 2 * 32 * (64 * 128 + 128 * 10)
    assert run("mymodels:with_inputs", "--out", "g2.json").returncode == 0
    for args, message in [
        (["mymodels:nope", "--out", "x.json"], "has no callable 'nope'"),
        (["nomodule:f", "--out", "x.json"], "cannot import module 'nomodule'"),
        (["mymodels:mlp", "--input-shape", "3,3", "--out", "x.json"], "does not export with these inputs"),
        (["mymodels:mlp", "--out", "x.json"], "returned no example inputs"),
        (["mymodels:mlp", "--input-shape", "a,b", "--out", "x.json"], "bad --input-shape"),
    ]:
        bad = run(*args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_shipped_transformer_graph_is_reproduced_by_the_zoo():
    _transformers()
    from placer import load_job_graph
    from placer.graphs.zoo import bert_base

    module, inputs = bert_base()
    assert from_torch(module, inputs, name="bert_base").key == load_job_graph("data/graphs/bert_base.json").key


def test_gavel_recommender_flops_by_hand():
    from placer.graphs.gavel_models import AutoencoderRecommender

    model = AutoencoderRecommender(items=100, widths=(8, 4))
    graph = from_torch(model, (torch.ones(16, 100),))
    # linears 100-8, 8-4, 4-8, 8-100 at batch 16: 2 x 16 x (800 + 32 + 32 + 800) multiply-adds
    assert graph.forward_flops == 2 * 16 * (800 + 32 + 32 + 800)
    from placer.graphs.catalog import resolve_graph

    shipped = resolve_graph("gavel_recommendation")
    assert shipped.forward_flops == 2 * 2048 * 2 * (26_744 * 512 + 512 * 512 + 512 * 1024)
