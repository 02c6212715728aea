"""The workload said once: WorkloadSpec, nested in the evaluation's and the environment's configs."""

import pytest

from placer.common.errors import WorkloadError
from placer.evaluate.config import EvaluationConfig
from placer.sim.queueing import QueueConfig
from placer.sim.workload import WorkloadSpec, nest_workload
from placer.workloads.generator import SizeDistribution


def test_specs_are_checked_once_and_held_typed():
    spec = WorkloadSpec(beta_dists=("A", "uniform:0.2:0.4"), size="loguniform:0.1:10", queue=("none", "edf-bf"))
    assert spec.size == ("loguniform:0.1:10",) and spec.sizes == (SizeDistribution("loguniform:0.1:10"),)
    assert spec.sizes[0].bounds == (0.1, 10.0) and spec.queues[1] == QueueConfig(32, "edf", True)
    for bad in ({"beta_dists": ("Z",)}, {"size": "loguniform:0:1"}, {"structure": "weekly"}, {"queue": "lifo"}):
        with pytest.raises(WorkloadError):
            WorkloadSpec(**bad)


def test_flat_fields_nest_and_older_names_map():
    assert nest_workload({"cluster": "pacml", "load": 0.5, "episode_jobs": 7}, {"episode_jobs": "jobs"}) == {
        "cluster": "pacml",
        "workload": {"load": 0.5, "jobs": 7},
    }
    assert nest_workload({"cluster": "pacml"}) == {"cluster": "pacml"}


def test_an_evaluation_reads_flat_and_nested_alike_and_runs_one_setting():
    flat = EvaluationConfig(cluster="pacml", beta_dists=["A"], load=0.5, jobs=10, seeds=1, policies=["lean"], queue="edf-bf")
    nested = EvaluationConfig.model_validate(flat.model_dump(mode="json"))
    assert nested == flat and flat.workload.queue == ("edf-bf",) and flat.beta_labels == ("A",)
    with pytest.raises(ValueError, match="one queue"):
        EvaluationConfig(cluster="pacml", jobs=10, seeds=1, policies=["lean"], queue=["none", "edf"])
    traced = EvaluationConfig(cluster="pacml", beta_dists=["trace"], trace="t.csv", load=1, jobs=1, seeds=1, policies=["lean"])
    assert traced.beta_labels == ("trace",)
