"""The per-job table (jobs.csv): its rows exactly, its percentiles, written whole or not at all (issue 53, item 3)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from placer.common.errors import ResultsError
from placer.evaluate import EvaluationConfig, evaluate, read_results, write_results
from placer.evaluate.jobs import JOB_COLUMNS, JobsWriter, job_rows, job_samples, percentiles, read_jobs, slowdown
from placer.sim.metrics import avoidability, compute_metrics
from placer.sim.types import BlockReason, JobRecord, Outcome


def record(job: int, graph: str, arrival: float, *, devices=(), wait=0.0, jct=None, fastest=None, reason=None, avoidable=True):
    """A job's record by hand: completed on ``devices`` in ``jct`` seconds, or blocked for ``reason``."""
    done = reason is None
    return JobRecord(
        job_id=job,
        graph=graph,
        arrival_s=arrival,
        beta=0.5,
        iterations=10,
        sequential_jct_s=100.0,
        deadline_s=50.0,
        outcome=Outcome.ACCEPTED if done else Outcome.BLOCKED,
        reason=reason,
        degree=len(devices),
        devices=tuple(devices),
        jct_s=jct,
        finish_s=arrival + wait + jct if done else None,
        wait_s=wait,
        fastest_jct_s=fastest,
        avoidable=avoidable,
    )


# lean serves two of three jobs: slowdowns (0 + 30) / 10 = 3 and (10 + 20) / 15 = 2; para_min one, its slowdown 3
LEAN = [
    record(0, "alexnet", 0.0, devices=(0, 1), jct=30.0, fastest=10.0),
    record(1, "gnmt", 5.0, devices=(2,), wait=10.0, jct=20.0, fastest=15.0),
    record(2, "gnmt", 6.0, wait=4.0, reason=BlockReason.DEADLINE, avoidable=False),
]
PARA_MIN = [LEAN[0], record(1, "gnmt", 5.0, reason=BlockReason.NO_CAPACITY), LEAN[2]]
RUNS = {"lean": LEAN, "para_min": PARA_MIN}


def name(device: int) -> str:
    return f"g{device}"


def hand_built(folder, runs=None, policy_files=None, **config) -> None:
    """A one-seed evaluation of three jobs written into ``folder`` (results.json and jobs.csv), its runs made by hand:
    ``runs`` maps each policy (as written: ``learned=mine:x.pt``) to its records (default :data:`RUNS`)."""
    from placer.evaluate import EvaluationResult

    runs = runs or RUNS
    settings = {"cluster": "dgx8x8", "policies": list(runs), "seeds": 1, "workload": {"jobs": 3}} | config
    evaluation = EvaluationConfig.model_validate(settings)
    result = EvaluationResult(evaluation, policy_files=policy_files or {})
    folder.mkdir(parents=True, exist_ok=True)
    with JobsWriter(folder / "jobs.csv", evaluation.policies) as writer:
        for policy, records in zip(evaluation.policies, runs.values(), strict=True):
            metrics = compute_metrics(records, [(0.0, 0)], 8).to_dict()
            result.runs.append({"policy": policy, "seed": 0, "beta_dist": "A", "load": 0.9, "cluster": "dgx8x8", **metrics})
            writer.write(job_rows(records, name, (policy, 0.9, "A", 0)))
    assert writer.table is not None
    result.jobs.append(writer.table)
    write_results(result, folder)


def test_a_runs_rows_say_exactly_what_happened_to_each_job(tmp_path):
    hand_built(tmp_path)
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0] == ",".join(JOB_COLUMNS)
    assert lines[1:4] == [
        "lean,0.9,A,0,0,0.0,alexnet,2,g0 g1,0.0,30.0,3.0,completed,,true",
        "lean,0.9,A,0,1,5.0,gnmt,1,g2,10.0,20.0,2.0,completed,,true",
        "lean,0.9,A,0,2,6.0,gnmt,0,,4.0,,,blocked,deadline,false",
    ]
    assert lines[5] == "para_min,0.9,A,0,1,5.0,gnmt,0,,0.0,,,blocked,no_capacity,true"
    assert len(lines) == 1 + 6


def test_the_slowdown_column_is_the_runs_mean_slowdown_job_by_job():
    assert [slowdown(r) for r in LEAN] == [3.0, 2.0, None]
    assert avoidability(LEAN)["mean_slowdown"] == np.mean([3.0, 2.0])
    unknown = record(3, "gnmt", 7.0, devices=(0,), jct=5.0, fastest=None)  # no fastest JCT measured: no slowdown
    assert slowdown(unknown) is None


def test_percentiles_are_linear_between_ranks_and_leave_out_what_is_undefined():
    assert percentiles(np.array([30.0, 20.0])) == pytest.approx([25.0, 29.0, 29.9], abs=1e-12)
    assert percentiles(np.array([10.0, 20.0, 30.0, 40.0, math.nan])) == pytest.approx([25.0, 37.0, 39.7], abs=1e-12)
    assert all(math.isnan(v) for v in percentiles(np.array([math.nan])))
    assert all(math.isnan(v) for v in percentiles(np.array([])))


def test_results_name_the_table_and_reading_it_back_pools_the_completed_jobs(tmp_path):
    hand_built(tmp_path)
    import json

    data = json.loads((tmp_path / "results.json").read_text())
    assert data["record"]["jobs"]["file"] == "jobs.csv" and data["record"]["jobs"]["rows"] == 6
    result = read_results(data, tmp_path)
    samples = job_samples(read_jobs(result.jobs), result.config.policies)
    assert (samples.completed("lean"), samples.blocked["lean"], samples.completed("para_min"), samples.blocked["para_min"]) == (2, 1, 1, 2)
    assert list(samples.array("lean", "jct_s")) == [30.0, 20.0] and list(samples.array("lean", "wait_s")) == [0.0, 10.0]
    assert list(samples.array("para_min", "slowdown")) == [3.0]
    assert samples.reasons == {"lean": {"deadline": 1}, "para_min": {"no_capacity": 1, "deadline": 1}}


def test_a_table_that_is_not_the_recorded_one_is_refused(tmp_path):
    hand_built(tmp_path)
    import json

    result = read_results(json.loads((tmp_path / "results.json").read_text()), tmp_path)
    with (tmp_path / "jobs.csv").open("a") as fh:
        fh.write("lean,0.9,A,0,9,1.0,gnmt,0,,0.0,,,blocked,rejected,true\n")
    with pytest.raises(ResultsError, match="not the per-job table its results.json was written with"):
        list(read_jobs(result.jobs))
    (tmp_path / "jobs.csv").unlink()
    with pytest.raises(ResultsError, match="is missing: its results.json names it"):
        list(read_jobs(result.jobs))


def test_a_crash_mid_evaluation_leaves_the_old_table_and_no_half_of_a_new_one(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("the old table\n")
    with pytest.raises(RuntimeError), JobsWriter(path, ["lean"]) as writer:
        writer.write(job_rows(LEAN, name, ("lean", 0.9, "A", 0)))
        raise RuntimeError("killed between two runs")
    assert path.read_text() == "the old table\n" and writer.table is None
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]  # no temporary file left beside it


def test_a_real_evaluation_streams_one_row_per_job_matching_its_runs(tmp_path):
    config = EvaluationConfig(
        cluster="dgx8x8", graphs=["alexnet", "resnet18"], beta_dists=["A", "C"], jobs=15, seeds=2, policies=["lean", "para_min"]
    )
    result = evaluate(config, jobs=tmp_path / "jobs.csv")
    (table,) = result.jobs
    with (tmp_path / "jobs.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert table.rows == len(rows) == 15 * 2 * 2 * 2
    for run in result.runs:
        mine = [r for r in rows if (r["policy"], r["beta_dist"], int(r["seed"])) == (run["policy"], run["beta_dist"], run["seed"])]
        assert [int(r["job"]) for r in mine] == list(range(15))
        assert sum(r["outcome"] == "blocked" for r in mine) / 15 == pytest.approx(run["blocking_rate"])
        slowdowns = [float(r["slowdown"]) for r in mine if r["slowdown"]]
        assert (np.mean(slowdowns) if slowdowns else None) == pytest.approx(run["mean_slowdown"])
        assert all(len(r["devices"].split()) == int(r["degree"]) for r in mine)
    pooled = evaluate(config, workers=2, jobs=tmp_path / "pooled.csv")  # spread over processes: the same table
    assert (tmp_path / "pooled.csv").read_bytes() == (tmp_path / "jobs.csv").read_bytes() and pooled.jobs[0].sha256 == table.sha256
