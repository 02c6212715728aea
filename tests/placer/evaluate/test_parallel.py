"""Evaluations spread over processes or Ray give byte-identical results to a serial run."""

import json

import pytest

from placer.evaluate import EvaluationConfig, evaluate, tasks

CONFIG = EvaluationConfig(
    cluster="dgx8x8",
    graphs=["alexnet", "resnet18"],
    beta_dists=["A", "C"],
    load=0.9,
    jobs=30,
    seeds=2,
    policies=["lean", "random", "lean:admit=0.9@edf"],
    queue="edf-bf:8",
    size="loguniform:0.1:10",
)


def _bytes(result):
    return json.dumps({"runs": result.runs, "timelines": result.timelines}, sort_keys=True)


def test_tasks_cover_every_run_in_report_order():
    order = [(t.beta_index, t.seed, t.policy_index) for t in tasks(CONFIG)]
    assert order == sorted(order) and len(order) == 2 * 2 * 3


def test_a_process_pool_gives_the_serial_results():
    serial = evaluate(CONFIG)
    ticks = []
    pooled = evaluate(CONFIG, workers=2, on_task=ticks.append)
    assert _bytes(pooled) == _bytes(serial)
    assert ticks == [30] * 12


@pytest.mark.slow
def test_ray_gives_the_serial_results():
    import ray  # a dev dependency: CI runs this

    try:
        assert _bytes(evaluate(CONFIG, ray_address="local")) == _bytes(evaluate(CONFIG))
    finally:
        ray.shutdown()
