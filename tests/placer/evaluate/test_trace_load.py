"""A replayed trace sets no load (its arrival times do): its runs record none, null in JSON and an empty cell in CSV,
tables say ``trace``, and results written before (which recorded the workload's unused default, 0.9) read the same."""

import csv
import json

from typer.testing import CliRunner

from placer.cli import app
from placer.evaluate import EvaluationConfig, evaluate, read_results, write_results
from placer.evaluate.config import load_label
from placer.evaluate.runner import Runner

GENERATED = EvaluationConfig(
    cluster="dgx8x8", graphs=["alexnet", "resnet18"], beta_dists=["B"], load=1.3, jobs=30, seeds=1, policies=["lean"]
)


def _write_trace(path, seed: int) -> str:
    """A stream of :data:`GENERATED` (seed ``seed``) written as a replayable trace."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["arrival_s", "graph", "beta", "iterations"])
        writer.writerows([job.arrival_s, job.graph.name, job.beta, job.iterations] for job in Runner(GENERATED).jobs(0, seed))
    return str(path)


def _evaluated(tmp_path, policies: list[str], tune: bool = False):
    """A trace evaluation of ``policies`` written to ``tmp_path / "ev"`` (tuned on another window where ``tune``)."""
    trace = _write_trace(tmp_path / "trace.csv", 1)
    tune_trace = _write_trace(tmp_path / "tuning.csv", 2) if tune else None
    config = EvaluationConfig(
        cluster="dgx8x8", graphs=["alexnet", "resnet18"], seeds=1, policies=policies, trace=trace, tune_trace=tune_trace
    )
    out = tmp_path / "ev"
    out.mkdir()
    result = evaluate(config, jobs=out / "jobs.csv")
    write_results(result, out)
    return result, out


def _csv_column(path, column: str) -> set[str]:
    with path.open(newline="") as f:
        return {row[column] for row in csv.DictReader(f)}


def test_a_trace_evaluation_records_no_load_and_a_generated_one_its_load(tmp_path):
    assert GENERATED.run_loads == (1.3,) and load_label(1.3) == "1.3" and load_label(None) == "trace"
    result, out = _evaluated(tmp_path, ["lean", "para_min"])
    assert result.config.run_loads == (None,)
    assert {run["load"] for run in result.runs} == {None} and {t["load"] for t in result.timelines} == {None}
    data = json.loads((out / "results.json").read_text())
    assert {run["load"] for run in data["runs"]} == {None}  # null, not the --load default 0.9
    assert {t["load"] for t in json.loads((out / "timelines.json").read_text())} == {None}
    assert _csv_column(out / "jobs.csv", "load") == {""}  # an empty cell: no load was set
    assert _csv_column(out / "summary.csv", "load") == {""}
    assert {row["load"] for row in result.summary()} == {None}


def test_results_of_a_trace_written_before_read_as_no_load_and_report_the_same(tmp_path):
    _, out = _evaluated(tmp_path, ["lean", "para_min"])
    data = json.loads((out / "results.json").read_text())
    older = tmp_path / "older"
    older.mkdir()
    for name in ("jobs.csv", "timelines.json"):
        (older / name).write_bytes((out / name).read_bytes())
    data["runs"] = [run | {"load": 0.9} for run in data["runs"]]  # as placer wrote a trace's runs before
    (older / "results.json").write_text(json.dumps(data))
    assert {run["load"] for run in read_results(data, older).runs} == {None}
    args = ["--outcomes", "--jobs", "--against", "lean", "--format", "markdown"]
    new, old = (CliRunner().invoke(app, ["report", str(folder), *args]) for folder in (out, older))
    assert new.exit_code == 0 and old.exit_code == 0, new.output + old.output
    assert new.output == old.output
    assert "| trace | trace | lean |" in new.output


def test_a_tuned_policys_choice_on_a_trace_is_reported_whatever_the_file_recorded_as_its_load(tmp_path):
    _, out = _evaluated(tmp_path, ["best", "lean"], tune=True)
    shown = CliRunner().invoke(app, ["report", str(out), "--format", "markdown"])
    assert shown.exit_code == 0, shown.output
    chosen = shown.output.partition("Member chosen on tuning streams")[2]
    row = next(line for line in chosen.splitlines() if line.startswith("| best |"))
    assert row != "| best | - |" and "(load" not in chosen  # the member chosen, not an empty cell; no load was set
