"""Public traces to replayable job traces: hand-checked rows and a replay."""

import numpy as np
import pytest

import placer
from placer.common.errors import WorkloadError
from placer.cost import CostModel
from placer.workloads.generator import BetaDistribution, read_trace
from placer.workloads.traces import convert_gavel, convert_philly, write_trace
from tests.placer.toys import chain

GAVEL = (
    "ResNet-50 (batch size 64)\tcd x && python3 main.py\t--num_minibatches\t1\t500\t10.000000\t1\n"
    "A3C\tcd x && python3 main.py\t--max-steps\t0\t2000\t4.500000\t1\n"
)
PHILLY = (
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:00:10,100.0,1,100.0,a\n"
    "2017-10-09 07:00:00,50.0,4,200.0,a\n"
    "2017-10-09 07:00:05,10.0,1,10.0,b\n"
)


def test_gavel_rows_map_models_batches_steps_and_arrivals(tmp_path):
    path = tmp_path / "g.trace"
    path.write_text(GAVEL)
    rows = convert_gavel(path, BetaDistribution("const:0.5"), np.random.default_rng(0))
    expected = [(4.5, "gavel_a3c", 0.5, 2000), (10.0, "resnet50@64", 0.5, 500)]
    assert [(r.arrival_s, r.graph, r.beta, r.iterations) for r in rows] == expected
    out = write_trace(rows, tmp_path / "g.csv")
    specs = read_trace(out, {}, placer.resolve_graph)
    assert specs[1].graph.batch_size == 64 and specs[1].graph.name == "resnet50" and specs[1].iterations == 500


def test_philly_rows_bucket_by_gpu_time_and_take_deadlines_from_duration(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(PHILLY)
    small = chain()  # named "toy"
    big = placer.JobGraph.from_networkx(nx_double(chain()), name="big", iterations=1)
    seq = {small.name: 6.0, big.name: 12.0}
    rows = convert_philly(path, [big, small], lambda g: seq[g.name], vc="a")
    # vc "a": two jobs, sorted by time. GPU times 200 and 100: one bucket edge at the median (150).
    # 07:00:00, 200 GPU-s on 4 GPUs for 50 s -> big, 200 / 12 -> 17 iterations, beta 50 / 200 = 0.25
    # 07:00:10, 100 GPU-s, 1 GPU for 100 s -> small (toy), 100 / 6 -> 17 iterations, beta 1
    assert [(r.arrival_s, r.graph, r.beta, r.iterations) for r in rows] == [(0.0, "big", 0.25, 17), (10.0, "toy", 1.0, 17)]
    with pytest.raises(WorkloadError, match="no jobs match"):
        convert_philly(path, [small], lambda g: 6.0, vc="zzz")


def nx_double(graph):
    g = graph.graph.copy()
    for _, attrs in g.nodes(data=True):
        attrs["compute_s"] *= 2
    return g


def test_bad_traces_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("Unknown Net (batch size 3)\ta\tb\t1\t10\t0.0\t1\n")
    with pytest.raises(WorkloadError, match="unknown job type"):
        convert_gavel(bad, BetaDistribution("A"), np.random.default_rng(0))
    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,graph,beta,iterations\n0,resnet50@x,0.5,10\n")
    with pytest.raises(WorkloadError, match="bad batch size"):
        read_trace(csv, {}, placer.resolve_graph)


def test_a_converted_window_replays(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(PHILLY)
    cost = CostModel(placer.load_cluster("dgx8x8"))
    rows = convert_philly(path, [placer.resolve_graph("resnet18"), placer.resolve_graph("vgg16")], cost.sequential_iteration_s)
    specs = read_trace(write_trace(rows, tmp_path / "out.csv"), {}, placer.resolve_graph)
    run = placer.simulate(cost, specs, placer.make_heuristic("para_min+best_fit").decide)
    assert run.metrics.jobs == 3
    for spec, row in zip(specs, rows, strict=True):  # the sequential JCT equals the trace's GPU time, to an iteration
        assert abs(cost.sequential_jct_s(spec.graph, spec.iterations) - {0.0: 200.0, 5.0: 10.0, 10.0: 100.0}[row.arrival_s]) <= (
            cost.sequential_iteration_s(spec.graph) / 2 + 1e-9
        )


def test_every_gavel_model_maps_to_a_shipped_graph():
    from placer.workloads.traces import GAVEL_GRAPHS

    graphs = {model: placer.resolve_graph(name) for model, name in GAVEL_GRAPHS.items()}
    assert graphs["LM"].batch_size == 20 and graphs["CycleGAN"].batch_size == 1 and graphs["ResNet-18"].batch_size == 128


def test_repeated_replays_of_one_trace_get_no_interval(tmp_path):
    from placer.evaluate import EvaluationConfig
    from placer.evaluate import evaluate as run_evaluation

    path = tmp_path / "t.csv"
    path.write_text("arrival_s,graph,beta,iterations\n0,alexnet,0.9,10\n1,vgg16,0.5,10\n2,alexnet,0.2,10\n")
    config = EvaluationConfig(
        cluster="pacml", trace=str(path), seeds=3, policies=["lean", "para_max"], workload={"graphs": ["alexnet", "vgg16"]}
    )
    result = run_evaluation(config)
    rows = {row["policy"]: row for row in result.summary()}
    assert [r["seed"] for r in result.runs if r["policy"] == "lean"] == [0, 1, 2]  # three replays of the same jobs
    assert not np.isnan(rows["lean"]["blocking_rate"]) and np.isnan(rows["lean"]["blocking_rate_ci95"])  # not "± 0.000"
    assert np.isnan(result.paired("lean", "para_max", "trace")[1])
