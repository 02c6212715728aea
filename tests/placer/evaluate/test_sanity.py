"""Evaluations whose numbers mean nothing say so, with the cause (issue 53, item 4)."""

from __future__ import annotations

from placer.evaluate import EvaluationConfig, EvaluationResult, evaluate
from placer.evaluate.sanity import meaningless

TINY = """name = "tiny"
[device_types.small]
memory_bytes = 1e6
speed = 1.0
[[servers]]
count = 2
devices_per_server = 1
device_type = "small"
[links.intra_server]
bandwidth_Bps = 300e9
latency_s = 1e-6
[links.inter_server]
bandwidth_Bps = 25e9
latency_s = 1e-6
"""


def tiny_cluster(folder) -> str:
    """A cluster of two 1 MB devices: no graph fits on it."""
    path = folder / "tiny.toml"
    path.write_text(TINY)
    return str(path)


def config(cluster: str, **workload) -> EvaluationConfig:
    return EvaluationConfig(
        cluster=cluster, seeds=1, policies=["lean", "para_max"], workload={"graphs": ["alexnet"], "beta_dists": ["A"], "jobs": 5} | workload
    )


def test_a_cluster_that_holds_no_graph_is_named_as_the_cause(tmp_path):
    result = evaluate(config(tiny_cluster(tmp_path)))
    assert all(r["accepted"] == 0 for r in result.runs)  # blocking 1.000 and a nan JCT, which alone say nothing
    (line,) = meaningless(result)
    assert line.startswith("no policy served any job (blocking 1.000 and JCT nan everywhere): ")
    assert "no device of cluster 'tiny' has memory for graph 'alexnet', nor any placement of up to 2 of them" in line


def test_deadlines_no_placement_meets_are_named_as_the_cause():
    (line,) = meaningless(evaluate(config("pacml", beta_dists=["const:0.01"])))
    assert "no job's fastest placement on the idle cluster meets its deadline (beta const:0.01)" in line


def test_a_sound_evaluation_gets_no_warning_and_a_policy_that_served_none_gets_one():
    result = evaluate(config("pacml", graphs=["alexnet", "resnet18"], beta_dists=["C"], jobs=30))
    assert meaningless(result) == []
    runs = [r | {"accepted": 0, "mean_jct_s": None} if r["policy"] == "para_max" else r for r in result.runs]
    assert meaningless(EvaluationResult(result.config, runs)) == ["para_max served no job (beta C): its mean JCT is nan"]
    unavoidable = [r | {"unavoidable_share": 1.0} for r in result.runs]
    (line,) = meaningless(EvaluationResult(result.config, unavoidable))
    assert line.startswith("every job was unavoidable")


def test_a_throughput_of_0_from_jobs_that_ended_after_the_window_is_named():
    result = evaluate(config("pacml", graphs=["alexnet", "resnet18"], beta_dists=["C"], load=99.0, jobs=20))
    assert all(r["accepted"] > 0 and r["completed_in_window"] == 0 for r in result.runs)  # jobs/hour 0.0, though jobs ran
    (line,) = meaningless(result)
    window = min(r["window_s"] for r in result.runs)
    assert line == (
        "jobs/hour is 0 in 2 of 2 runs (lean, para_max): none of the jobs they accepted completed within the stream's "
        f"measurement window (the shortest {window:.3g} s); more --jobs or a lower --load widens it"
    )
