"""Tuned policies on a replayed trace: tuned on another window of it (--tune-trace), never on the evaluated one."""

import csv

import pytest
from typer.testing import CliRunner

from placer.cli import app
from placer.common.errors import PolicyError, WorkloadError
from placer.evaluate import EvaluationConfig, evaluate
from placer.evaluate.runner import Runner, Task
from placer.graphs.catalog import resolve_graph
from placer.workloads.generator import JobSpec, trace_load

GENERATED = EvaluationConfig(
    cluster="dgx8x8", graphs=["alexnet", "resnet18"], beta_dists=["B"], load=1.3, jobs=40, seeds=1, policies=["lean"]
)


def _write_trace(path, seed: int) -> str:
    """A stream of :data:`GENERATED` (seed ``seed``) written as a replayable trace."""
    jobs = Runner(GENERATED).jobs(0, seed)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["arrival_s", "graph", "beta", "iterations"])
        writer.writerows([job.arrival_s, job.graph.name, job.beta, job.iterations] for job in jobs)
    return str(path)


def _config(trace: str, tune_trace: str | None, policies: list[str]) -> EvaluationConfig:
    return EvaluationConfig(
        cluster="dgx8x8", graphs=["alexnet", "resnet18"], jobs=40, seeds=1, policies=policies, trace=trace, tune_trace=tune_trace
    )


def test_a_trace_load_is_its_arrival_rate_times_its_mean_sequential_time_per_device():
    graph = resolve_graph("alexnet")
    jobs = [JobSpec(0.0, graph, 0.5, 1), JobSpec(10.0, graph, 0.5, 2), JobSpec(20.0, graph, 0.5, 3)]
    # 2 gaps over 20 s = 0.1 jobs/s, x mean (4 + 8 + 12) / 3 = 8 s, over 2 devices
    assert trace_load(jobs, lambda _graph, iterations: 4.0 * iterations, 2) == pytest.approx(0.4)
    with pytest.raises(WorkloadError, match="two or more distinct arrival times"):
        trace_load(jobs[:1], lambda _graph, iterations: 1.0, 2)
    with pytest.raises(WorkloadError, match="two or more distinct arrival times"):
        trace_load([jobs[0], jobs[0]], lambda _graph, iterations: 1.0, 2)


def test_a_tuning_trace_needs_an_evaluated_trace_and_must_not_be_it(tmp_path):
    trace = _write_trace(tmp_path / "evaluated.csv", 1)
    with pytest.raises(ValueError, match="give the --trace too"):
        EvaluationConfig(cluster="dgx8x8", jobs=40, seeds=1, policies=["best"], tune_trace=trace)
    with pytest.raises(ValueError, match="is the evaluated --trace"):
        _config(trace, str(tmp_path / "." / "evaluated.csv"), ["best"])


def test_best_and_adaptive_are_tuned_on_the_tuning_trace_alone(tmp_path):
    trace, tuning_trace = _write_trace(tmp_path / "evaluated.csv", 1), _write_trace(tmp_path / "tuning.csv", 2)
    untuned = Runner(_config(trace, None, ["best", "adaptive", "lean"]))
    for index, name in enumerate(["best", "adaptive"]):
        with pytest.raises(PolicyError, match=rf"^{name} is tuned: .* \(--tune-trace\)"):
            untuned.policy(Task(0, 0, index))
    assert untuned.policy(Task(0, 0, 2)) is untuned.policies[2]  # a policy with nothing to tune runs as it is
    runner = Runner(_config(trace, tuning_trace, ["best", "adaptive", "lean"]))
    tuning = runner.tuning(runner.queue, 0, 0)
    assert tuning.jobs == [runner.tune_trace] and tuning.pooled == (tuning,)
    assert tuning.jobs[0] != runner.trace  # another window: the evaluated jobs are not tuned on
    assert tuning.load == pytest.approx(trace_load(runner.tune_trace, runner.cost.sequential_jct_s, 64))
    result = evaluate(_config(trace, tuning_trace, ["best", "adaptive", "lean"]))
    assert [run["policy"] for run in result.runs] == ["best", "adaptive", "lean"]
    assert all(run["jobs"] == 40 for run in result.runs)


def test_the_cli_tunes_on_the_tuning_trace_and_the_report_names_it(tmp_path):
    trace, tuning_trace = _write_trace(tmp_path / "evaluated.csv", 1), _write_trace(tmp_path / "tuning.csv", 2)
    common = ["evaluate", "--cluster", "dgx8x8", "--graphs", "alexnet,resnet18", "--trace", trace, "--seeds", "1"]
    refused = CliRunner().invoke(app, [*common, "--policies", "best", "--out", str(tmp_path / "no")])
    assert refused.exit_code != 0 and "--tune-trace" in str(refused.exception or refused.output)
    done = CliRunner().invoke(app, [*common, "--tune-trace", tuning_trace, "--policies", "best,lean", "--out", str(tmp_path / "ev")])
    assert done.exit_code == 0, done.output
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "ev"), "--outcomes", "--format", "markdown"])
    assert shown.exit_code == 0, shown.output
    assert f"tuned on {tuning_trace}" in " ".join(shown.output.split())
    assert "| trace | trace | best |" in shown.output  # no load was set: none is shown
    assert "(load" not in shown.output and "| best |" in shown.output.split("Member chosen")[1]
