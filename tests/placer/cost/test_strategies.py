"""Data, tensor and pipeline parallelism: hand-worked tiny cases, invariants and fidelity."""

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placer
from placer.cli import app
from placer.cluster.devices import device_model
from placer.cluster.topology import Cluster, parse_cluster_spec
from placer.common.errors import GraphValidationError, PlacerError
from placer.cost import CostModel, Strategy
from placer.cost.collectives import Fabric, allreduce_s
from placer.cost.fidelity import fidelity_rows
from placer.cost.pipeline import balanced_stages
from placer.graphs.backward import training_graph
from placer.graphs.job_graph import JobGraph, job_graph_from_dict
from tests.placer.toys import toy_cluster


def layer(name: str, fw: float, bw: float, params: float = 0.0, act: float = 0.0) -> dict:
    return {"name": name, "compute_s": fw, "backward_compute_s": bw, "param_bytes": params, "activation_bytes": act}


def mirrored(ops: dict[str, dict], edges: list[tuple[str, str]], **metadata) -> JobGraph:
    forward = nx.DiGraph()
    for node, attrs in ops.items():
        forward.add_node(node, **attrs)
    for u, v in edges:
        forward.add_edge(u, v, tensor_bytes=ops[u]["activation_bytes"])
    return JobGraph(training_graph(forward), name="toy", iterations=1, **metadata)


def test_hierarchical_allreduce_by_hand():
    fabric = Fabric(intra_Bps=8e9, intra_latency_s=0.0, nic_Bps=4e9, nics_per_server=1, inter_latency_s=0.0)
    # one server of 4: 2 * 3/4 * 8e9 / 8e9 = 1.5 s
    assert allreduce_s(8e9, (4,), fabric) == pytest.approx(1.5)
    # 2 + 2 on two servers: intra 2 * 1/2 * 8e9 / 8e9 = 1 s, inter 2 * 1/2 * 8e9 / (1 NIC x 4e9) = 2 s
    assert allreduce_s(8e9, (2, 2), fabric) == pytest.approx(3.0)
    # two concurrent groups share the one NIC: inter bandwidth 4e9 / 2 per group
    assert allreduce_s(8e9, (2, 2), fabric, concurrent=2) == pytest.approx(1.0 + 4.0)
    eight_nics = Fabric(8e9, 0.0, 4e9, 8, 0.0)
    assert allreduce_s(8e9, (2, 2), eight_nics) == pytest.approx(1.0 + 1.0)  # each server uses 2 of its 8 NICs


def test_data_parallel_hides_gradient_sync_under_the_backward_pass():
    # one op: forward 2 s, backward 4 s, 1e9 fp32 parameter bytes; 2 replicas on one server (8e9 B/s).
    # replica: forward 1 s, backward 2 s; 40 buckets of 25e6 B, each all-reduce 2 * 1/2 * 25e6 / 8e9 = 3.125e-3 s:
    # the last finishes at max(2 + a, 2/40 + 40 a) = 2.003125 -> T = 1 + 2.003125
    graph = mirrored({"w": layer("Linear", 2.0, 4.0, params=1e9)}, [])
    cost = CostModel(toy_cluster(1, 2), strategy="dp")
    p = cost.predict(graph, [0, 1])
    assert p.strategy == Strategy(2, 1, 1)
    assert p.iteration_s == pytest.approx(3.003125)
    assert p.comm_s == pytest.approx(0.003125)
    assert p.memory_per_device_bytes == pytest.approx(4 * 1e9)  # weights, gradients, Adam m and v: replicated


def test_data_parallel_exposes_sync_on_a_slow_network():
    # the same job on 2 single-device servers with 1e8 B/s NICs: a = 2 * 1/2 * 25e6 / 1e8 = 0.25 s,
    # max(2 + 0.25, 2/40 + 40 * 0.25) = 10.05 -> T = 1 + 10.05
    graph = mirrored({"w": layer("Linear", 2.0, 4.0, params=1e9)}, [])
    cost = CostModel(toy_cluster(2, 1, inter=(1e8, 0.0)), strategy="dp")
    assert cost.predict(graph, [0, 1]).iteration_s == pytest.approx(11.05)


def _opted_in(cluster: Cluster, overlap: float | None = None, inter_kind: str | None = None) -> Cluster:
    """``cluster`` with a ``[communication]`` table (issue 51's terms opted into), and an inter-server link kind if given."""
    data = cluster.spec.model_dump() | {"communication": {} if overlap is None else {"overlap": overlap}}
    if inter_kind is not None:
        data["links"]["inter_server"]["kind"] = inter_kind
    return Cluster(parse_cluster_spec(data))


def test_a_flat_ring_over_a_shared_nic_when_opted_in():
    """Servers whose GPUs share one NIC run one flat ring (opted in); without opting in, hierarchical as above."""
    fabric = Fabric(intra_Bps=8e9, intra_latency_s=0.0, nic_Bps=4e9, nics_per_server=1, inter_latency_s=0.0, detailed=True)
    assert allreduce_s(8e9, (4,), fabric) == pytest.approx(1.5)  # one server: the ring inside, as before
    # 2 + 2 on two servers, the two members of each sharing its NIC: a flat ring of 4, 2 * 3/4 * 8e9 / 4e9 = 3 s
    assert allreduce_s(8e9, (2, 2), fabric) == pytest.approx(3.0)
    # two concurrent groups share the one NIC: 4e9 / 2 per group's ring
    assert allreduce_s(8e9, (2, 2), fabric, concurrent=2) == pytest.approx(2 * 3 / 4 * 8e9 / 2e9)
    # one member per server, each with the NIC to itself: both forms agree, 2 * 1/2 * 8e9 / 4e9
    assert allreduce_s(8e9, (1, 1), fabric) == pytest.approx(2.0)
    # four per server on one NIC: the NIC carries 2 * 7/8 of the bytes (hierarchically 1.5 s inside + 2 * 1/2 * 8e9 / 4e9)
    assert allreduce_s(8e9, (4, 4), fabric) == pytest.approx(2 * 7 / 8 * 8e9 / 4e9)
    assert allreduce_s(8e9, (4, 4), Fabric(8e9, 0.0, 4e9, 1, 0.0)) == pytest.approx(1.5 + 2.0)
    eight_nics = Fabric(8e9, 0.0, 4e9, 8, 0.0, detailed=True)
    assert allreduce_s(8e9, (2, 2), eight_nics) == pytest.approx(1.0 + 1.0)  # each server uses 2 of its 8 NICs: hierarchical


def test_bucket_order_hides_what_the_backward_pass_allows_when_opted_in():
    # two ops in a chain: forward 1 + 1 s, backward 2 + 2 s, 5e8 fp32 parameter bytes each; 2 replicas on one
    # server (8e9 B/s). Replica: forward 1 s, backward 2 s; the backward produces b's gradients at 1 s (one bucket of
    # 5e8 B: all-reduced in 2 * 1/2 * 5e8 / 8e9 = 0.0625 s, hidden), a's at 2 s: exposed 0.0625 -> T = 1 + 2.0625
    graph = mirrored({"a": layer("Linear", 1.0, 2.0, params=5e8), "b": layer("Linear", 1.0, 2.0, params=5e8)}, [("a", "b")])
    p = CostModel(_opted_in(toy_cluster(1, 2)), strategy="dp").predict(graph, [0, 1])
    assert p.strategy == Strategy(2, 1, 1)
    assert p.iteration_s == pytest.approx(3.0625)
    assert p.comm_s == pytest.approx(0.0625)
    # on 2 single-device servers with 1e8 B/s NICs each bucket all-reduces in 2 * 1/2 * 5e8 / 1e8 = 5 s; b's from 1 s
    # to 6 s, a's (ready at 2 s) from 6 s to 11 s: exposed 9 s -> T = 1 + 2 + 9
    slow = toy_cluster(2, 1, inter=(1e8, 0.0))
    assert CostModel(_opted_in(slow), strategy="dp").predict(graph, [0, 1]).iteration_s == pytest.approx(12.0)
    # overlap 0 hides nothing: all 10 s after the backward pass; 0.5 half-way between
    for overlap, expected in ((0.0, 13.0), (0.5, 12.5)):
        assert CostModel(_opted_in(slow, overlap), strategy="dp").predict(graph, [0, 1]).iteration_s == pytest.approx(expected)
    # an Ethernet NIC delivers a quarter of its line rate by default: 20 s per bucket, b's to 21 s, a's to 41 s
    ethernet = _opted_in(slow, inter_kind="ethernet")
    assert CostModel(ethernet, strategy="dp").predict(graph, [0, 1]).iteration_s == pytest.approx(1 + 41)
    # without opting in: even buckets (40 of 25 MB, 0.25 s each), max(2 + 0.25, 2/40 + 40 * 0.25) -> T = 1 + 10.05
    assert CostModel(slow, strategy="dp").predict(graph, [0, 1]).iteration_s == pytest.approx(11.05)
    # a link kind alone opts in; efficiency alone only scales the line rate
    data = slow.spec.model_dump()
    data["links"]["inter_server"]["kind"] = "ethernet"
    assert Cluster(parse_cluster_spec(data)).spec.detailed_comm and not slow.spec.detailed_comm
    data["links"]["inter_server"] = {"bandwidth_Bps": 4e8, "latency_s": 0.0, "efficiency": 0.25}
    assert CostModel(Cluster(parse_cluster_spec(data)), strategy="dp").predict(graph, [0, 1]).iteration_s == pytest.approx(11.05)


def test_tensor_parallel_splits_a_megatron_pair_and_all_reduces_its_output():
    # Linear (column) -> ReLU (sharded) -> Linear (row: all-reduce of 1e8 B). tp = 2 on one server (8e9 B/s):
    # compute (2 + 1 + 2 + 4 + 2 + 4) / 2 = 7.5 s; all-reduce 2 * 1/2 * 1e8 / 8e9 = 0.0125 s, forward and backward.
    ops = {
        "a": layer("Linear", 2.0, 4.0, params=4e6, act=1e8),
        "b": layer("ReLU", 1.0, 2.0, act=1e8),
        "c": layer("Linear", 2.0, 4.0, params=4e6, act=1e8),
    }
    graph = mirrored(ops, [("a", "b"), ("b", "c")])
    cost = CostModel(toy_cluster(1, 2), strategy="tp")
    p = cost.predict(graph, [0, 1])
    assert p.strategy == Strategy(1, 2, 1)
    assert p.iteration_s == pytest.approx(7.5 + 2 * 0.0125)
    assert p.memory_per_device_bytes == pytest.approx(4 * 8e6 / 2 + 3e8 / 2)
    profile = cost.profile(graph, None, 1.0)
    assert profile.sharding.split.tolist() == [True, True, True]
    assert profile.sharding.allreduce_bytes.tolist() == [0.0, 0.0, 1e8]


def test_tensor_parallel_never_spans_servers():
    graph = mirrored({"w": layer("Linear", 2.0, 4.0, params=1e9)}, [])
    p = CostModel(toy_cluster(2, 1), strategy="tp").predict(graph, [0, 1])
    assert p.strategy is None and not p.fits


def test_pipeline_one_f_one_b_by_hand():
    # four equal ops (forward 1 s, backward 2 s), 8e9-byte tensors; p = 2 stages of two ops, m = 4p = 8 micro-batches.
    # Per micro-batch a stage computes 2/8 + 4/8 = 0.75 s and sends 8e9 / 8 B over 8e9 B/s = 0.125 s each way:
    # 0.875 s per stage, T = (m + p - 1) x 0.875 = 7.875 s.
    ops = {k: layer("Linear", 1.0, 2.0, act=8e9) for k in "abcd"}
    graph = mirrored(ops, [("a", "b"), ("b", "c"), ("c", "d")])
    p = CostModel(toy_cluster(1, 2), strategy="pp").predict(graph, [0, 1])
    assert (p.strategy, p.micro_batches) == (Strategy(1, 1, 2), 8)
    assert p.iteration_s == pytest.approx(7.875)
    assert p.comm_s == pytest.approx(7.875 - 9 * 0.75)


def test_auto_picks_the_fastest_split_that_fits():
    # 30e9 fp32 parameter bytes = 120e9 of optimizer state: data parallel replicates it and cannot fit in 80 GB,
    # tensor parallel over 2 halves it to 60e9 and fits.
    graph = mirrored(
        {"a": layer("Linear", 2.0, 4.0, params=15e9, act=1e6), "b": layer("Linear", 2.0, 4.0, params=15e9, act=1e6)}, [("a", "b")]
    )
    cost = CostModel(toy_cluster(1, 2))
    p = cost.predict(graph, [0, 1])
    assert p.fits and p.strategy.dp == 1 and p.memory_per_device_bytes <= 80e9
    assert not cost.predict(graph, [0, 1], "dp").fits


def test_rescaling_to_the_placed_device_by_kind():
    # profiled on a V100 in fp32: a convolution scales with sustained matmul FLOP/s, a ReLU with bandwidth.
    graph = mirrored(
        {"conv": layer("Conv2d", 1.0, 0.0), "relu": layer("ReLU", 1.0, 0.0)},
        [("conv", "relu")],
        profiled_on=("V100-16GB", "fp32"),
        precision="tf32",
        batch_size=4,
    )
    v100, a100 = device_model("V100-16GB"), device_model("A100-80GB")
    expected = v100.matmul_rate("fp32") / a100.matmul_rate("tf32") + v100.memory_rate("fp32") / a100.memory_rate("tf32")
    cost = CostModel(placer.load_cluster("dgx8x8"))
    assert cost.predict(graph, [0]).iteration_s == pytest.approx(expected)
    assert cost.sequential_jct_s(graph) == pytest.approx(expected)


def test_batch_size_rescales_compute_and_bytes_but_not_parameters():
    graph = mirrored({"w": layer("Linear", 2.0, 4.0, params=1e6, act=1e3)}, [], batch_size=8)
    double = graph.with_batch_size(16)
    assert double.batch_size == 16 and double.sequential_iteration_s == pytest.approx(12.0)
    assert double.parameter_bytes == graph.parameter_bytes and double.activation_bytes == pytest.approx(2e3)
    again = job_graph_from_dict(json.loads(json.dumps(double.to_dict())))
    assert again.key == double.key and again.batch_size == 16
    with pytest.raises(GraphValidationError, match="no batch_size"):
        mirrored({"w": layer("Linear", 1.0, 1.0)}, []).with_batch_size(2)


def test_data_parallel_never_splits_a_batch_below_one_sample():
    graph = mirrored({"w": layer("Linear", 2.0, 4.0, params=1e6)}, [], batch_size=2)
    p = CostModel(toy_cluster(1, 4)).predict(graph, [0, 1, 2, 3])
    assert p.strategy.dp <= 2


@settings(max_examples=60, deadline=None)
@given(weights=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=8), p=st.integers(1, 4))
def test_balanced_stages_are_contiguous_nonempty_and_optimal(weights, p):
    w = np.array(weights)
    p = min(p, len(w))
    starts = balanced_stages(w, p)
    assert starts[0] == 0 and starts[-1] == len(w) and all(a < b for a, b in itertools.pairwise(starts))
    heaviest = max(w[a:b].sum() for a, b in itertools.pairwise(starts))
    best = min(
        max(w[a:b].sum() for a, b in itertools.pairwise((0, *cuts, len(w)))) for cuts in itertools.combinations(range(1, len(w)), p - 1)
    )
    assert heaviest == pytest.approx(best, rel=1e-6, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(degree=st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]), name=st.sampled_from(["resnet50", "gnmt", "vgg16", "gpt2_small"]))
def test_auto_is_never_slower_than_a_pure_strategy_that_fits(degree, name):
    cost = CostModel(placer.load_cluster("dgx8x8"))
    graph = placer.resolve_graph(name)
    devices = list(range(degree))
    auto = cost.predict(graph, devices)
    assert auto.strategy.degree == degree
    for mode in ("dp", "tp", "pp"):
        pure = cost.predict(graph, devices, mode)
        if pure.fits:
            assert auto.fits and auto.iteration_s <= pure.iteration_s * (1 + 1e-12)


@pytest.mark.parametrize("row", fidelity_rows(), ids=lambda r: r["what"])
def test_fidelity_against_published_measurements(row):
    """Every row within 15 %; a constant fitted to a single row within 1 % (two rows share ``sync_s``)."""
    shared_fit = "scaling" in row["what"] and "data parallel" in row["what"]
    assert abs(row["error"]) <= (0.01 if row["calibrated"] and not shared_fit else 0.15), row


def test_decisions_and_records_show_the_strategy():
    graph = placer.resolve_graph("resnet50")
    decision = placer.place(graph, "dgx8x8", beta=0.2)
    assert decision.accepted and decision.strategy == {"dp": decision.degree, "tp": 1, "pp": 1}
    prediction = placer.predict(graph, "dgx8x8", 8)
    assert prediction.servers == 1 and prediction.fits and prediction.strategy["dp"] * prediction.strategy["tp"] == 8
    assert placer.predict(graph, "pacml", 4, strategy="sipml").strategy == {"sipml": 4}


def test_predict_cli(capsys):
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["predict", "gpt2_small", "--cluster", "dgx8x8", "--degree", "4", "--strategy", "tp"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["strategy"] == {"dp": 1, "tp": 4, "pp": 1} and out["degree"] == 4 and out["precision"] == "bf16"
    bad = CliRunner().invoke(app, ["predict", "gpt2_small", "--degree", "4", "--devices", "s0-g0"])
    assert isinstance(bad.exception, PlacerError) and "exactly one of" in str(bad.exception)  # main() prints it, exit 2


@pytest.mark.parametrize("cluster", ["pacml", "dgx8x8", "dgxh100", "mixed"])
def test_predict_answers_for_every_shipped_graph(cluster):
    from placer.graphs.catalog import shipped_graph_names

    for name in shipped_graph_names():
        graph = placer.resolve_graph(name)
        for degree in (1, 8):
            p = placer.predict(graph, cluster, degree)
            assert p.strategy is not None and np.isfinite(p.iteration_s) and p.iteration_s > 0, (name, degree)
            assert p.speedup > 0 and p.memory_per_device_bytes > 0
