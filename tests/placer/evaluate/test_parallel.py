"""Evaluations spread over processes or Ray give byte-identical results to a serial run."""

import json

import pytest

from placer.evaluate import EvaluationConfig, evaluate, tasks
from placer.evaluate.parallel import run_task_groups
from placer.evaluate.runner import Runner
from tests.conftest import RAY

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


def test_one_pool_over_several_evaluations_gives_each_its_serial_results():
    other = CONFIG.model_copy(update={"cluster": "mixed", "policies": ["lean"]})  # another cluster between two of dgx8x8
    same = CONFIG.model_copy(update={"policies": ["random"]})
    groups = [(config, tasks(config)) for config in (CONFIG, other, same)]
    ticks = []
    pooled = list(run_task_groups(groups, workers=2, on_task=ticks.append))
    assert [len(outputs) for outputs in pooled] == [12, 4, 4] and len(ticks) == 20
    for (config, todo), outputs in zip(groups, pooled, strict=True):
        serial = Runner(config)
        assert json.dumps(outputs, sort_keys=True) == json.dumps([serial.run(task) for task in todo], sort_keys=True)


@pytest.mark.slow
@pytest.mark.xdist_group(RAY)  # starts its own Ray instance: not beside the Ray tests' cluster
def test_ray_gives_the_serial_results(monkeypatch):
    import ray  # in the all extra: CI runs this

    # --ray local starts its own instance: a dead cluster named by RAY_ADDRESS (or by an old
    # /tmp/ray/ray_current_cluster, which Ray reads the same way) is not waited for
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    try:
        assert _bytes(evaluate(CONFIG, ray_address="local")) == _bytes(evaluate(CONFIG))
    finally:
        ray.shutdown()


def test_intervals_are_undefined_for_one_seed_and_bars_stop_at_the_range():
    import math

    from placer.evaluate.stats import clipped_errors, mean_ci95, plus_minus

    mean, half = mean_ci95([0.25])
    assert mean == 0.25 and math.isnan(half) and plus_minus(mean, half) == "0.250 ± n/a"
    assert plus_minus(*mean_ci95([1.0, 3.0]), ".1f") == "2.0 ± 12.7"
    assert clipped_errors([0.1, 0.95, 0.5], [0.3, 0.3, math.nan], 0.0, 1.0) == [[0.1, 0.3, 0.0], [0.3, 0.050000000000000044, 0.0]]


def test_a_policy_keeps_its_colour_and_style_in_every_panel():
    from placer.evaluate.plots import policy_style

    policies = ["lean", "para_min", "learned"]
    assert policy_style("para_min", policies) == {"color": "C1", "ls": "--"}
    assert policy_style("learned", policies) == policy_style("learned", list(policies))


def test_an_unreachable_ray_address_is_one_line_within_seconds():
    import socket
    import time

    from placer.common.errors import PlacerError

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(PlacerError, match=f"cannot reach a Ray cluster at '127.0.0.1:{port}'"):
        evaluate(CONFIG, ray_address=f"127.0.0.1:{port}")
    assert time.monotonic() - started < 10
