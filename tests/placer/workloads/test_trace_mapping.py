"""The rules every trace importer shares: one deadline rule, one model table, one GPU-type table, and the
``placer import trace`` command that prints what it kept, mapped and dropped."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import placer
from placer.cli import app
from placer.cluster.devices import DEVICE_MODELS
from placer.common.errors import WorkloadError
from placer.graphs.catalog import shipped_graph_names
from placer.workloads.generator import BetaDistribution, read_trace
from placer.workloads.traces import MODEL_GRAPHS, DeadlineRule, GraphMapping, convert_gavel, import_trace
from placer.workloads.traces.mapping import DEVICE_OF_GPU_TYPE, draw_betas, fastest_device, origin_s, size_buckets
from tests.placer.toys import op, toy_graph

FIXTURES = Path(__file__).parent / "fixtures"
HELIOS = FIXTURES / "helios_cluster_log.csv"


def toy_mapping() -> GraphMapping:
    return GraphMapping((toy_graph({"a": op(1.0)}, {}, name="small"),), lambda g: 10.0)


def test_the_deadline_rule_is_one_seeded_draw_per_job_in_arrival_order():
    rule = DeadlineRule(BetaDistribution("A"), seed=7)
    assert rule.draw(6) == rule.draw(6)  # the same seed, the same deadlines
    assert rule.draw(6) != DeadlineRule(BetaDistribution("A"), seed=8).draw(6)
    assert rule.draw(6) == [float(x) for x in np.random.default_rng(7).uniform(0.1, 1.0, 6)]  # A is uniform(0.1, 1)
    rows, _ = import_trace("helios", HELIOS, toy_mapping(), rule)
    assert [r.beta for r in rows] == rule.draw(6)
    again, _ = import_trace("helios", HELIOS, toy_mapping(), rule)
    assert again == rows


def test_gavel_draws_its_deadlines_by_the_shared_rule(tmp_path):
    path = tmp_path / "g.trace"
    path.write_text("A3C\tcd x\t--max-steps\t0\t2000\t9.0\t1\nLM (batch size 5)\tcd x\t--steps\t1\t10\t1.0\t1\n")
    rows = convert_gavel(path, BetaDistribution("C"), np.random.default_rng(3))
    first, second = draw_betas(BetaDistribution("C"), np.random.default_rng(3), 2)  # drawn in file order
    assert [(r.graph, r.beta) for r in rows] == [("gavel_lm@5", second), ("gavel_a3c", first)]


def test_the_tables_name_shipped_graphs_and_known_devices():
    assert set(MODEL_GRAPHS.values()) <= set(shipped_graph_names())
    assert set(DEVICE_OF_GPU_TYPE.values()) <= set(DEVICE_MODELS)
    assert fastest_device(["V100-16GB", None, "A100-80GB", "T4"]) == "A100-80GB"
    assert fastest_device([None]) is None


def test_arrivals_count_from_the_first_midnight_or_the_start():
    assert origin_s(3 * 86400 + 5, None) == 3 * 86400
    assert origin_s(3 * 86400 + 5, 100.0) == 100.0


def test_buckets_split_the_quantiles_of_work_among_graphs_by_size():
    graphs = [toy_graph({"a": op(1.0)}, {}, name=n) for n in ("c", "a", "b")]
    seq = {"a": 1.0, "b": 2.0, "c": 3.0}
    picked = size_buckets(graphs, lambda g: seq[g.name], [1, 2, 3, 4, 5, 6])
    assert [g.name for g in picked] == ["a", "a", "b", "b", "c", "c"]  # tertiles: smallest work, fastest graph
    with pytest.raises(WorkloadError, match="at least one graph"):
        GraphMapping((), lambda g: 1.0)


def test_import_trace_prints_what_it_kept_mapped_and_dropped(tmp_path):
    out = tmp_path / "helios.csv"
    args = ["import", "trace", "helios", str(HELIOS), "--out", str(out), "--graphs", "alexnet,vgg16", "--seed", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "wrote" in text and "helios: 11 rows read, 6 jobs kept" in text
    for line in ("dropped │ failed │ 2", "dropped │ cpu-only │ 1", "dropped │ unparsable │ 1", "dropped │ no run time │ 1"):
        assert line in text
    assert "alexnet (by GPU time)" in text and "vgg16 (by GPU time)" in text
    assert "arrival 0 = 2020-04-01 00:00:00 on the trace's clock; first job 8:00:00 later" in text
    specs = read_trace(out, {}, placer.resolve_graph)
    assert [s.arrival_s for s in specs][:2] == [8 * 3600.0, 9.5 * 3600.0]
    assert {s.graph.name for s in specs} == {"alexnet", "vgg16"}


def test_gavel_keeps_the_first_jobs_and_refuses_what_its_trace_lacks(tmp_path):
    """``--jobs`` cuts Gavel's trace too (it was ignored there); ``--start`` and ``--vc``, which it has no use for, are one
    line, not silence."""
    path, out = tmp_path / "g.trace", tmp_path / "g.csv"
    path.write_text("A3C\tcd x\t--max-steps\t0\t2000\t9.0\t1\nLM (batch size 5)\tcd x\t--steps\t1\t10\t1.0\t1\n")
    result = CliRunner().invoke(app, ["import", "trace", "gavel", str(path), "--jobs", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines()[1].split(",")[1] == "gavel_lm@5" and len(out.read_text().splitlines()) == 2  # the first
    for option, value, lacks in (("--start", "2017-10-09", "calendar"), ("--vc", "x", "virtual clusters")):
        result = CliRunner().invoke(app, ["import", "trace", "gavel", str(path), option, value, "--out", str(out)])
        assert f"gavel's trace has no {lacks}" in str(result.exception)


def test_import_trace_refuses_bad_input_in_one_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["import", "trace", "acme", str(HELIOS), "--out", str(tmp_path / "x.csv")])
    assert isinstance(result.exception, WorkloadError) and "expected columns job_id,user,node_num" in str(result.exception)
    result = runner.invoke(app, ["import", "trace", "slurm", str(HELIOS), "--out", str(tmp_path / "x.csv")])
    assert isinstance(result.exception, WorkloadError) and "unknown trace kind 'slurm'" in str(result.exception)
    result = runner.invoke(app, ["import", "trace", "pollux", str(tmp_path / "none.csv"), "--out", str(tmp_path / "x.csv")])
    assert isinstance(result.exception, WorkloadError) and "cannot read pollux trace" in str(result.exception)


def test_the_philly_summary_reports_its_drops(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,50,4,200,a\n2017-10-09 07:00:05,10,1,0,a\n")
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(app, ["import", "trace", "philly", str(path), "--out", str(out), "--graphs", "alexnet"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "philly: 2 rows read, 1 jobs kept" in text and "dropped │ no GPU time │ 1" in text
