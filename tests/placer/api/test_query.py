import json
import subprocess
import sys

import pytest

import placer
from placer.api import ClusterState, place
from placer.baselines.registry import make_heuristic
from placer.common.errors import PlacerError
from tests.placer.toys import chain, toy_cluster


def test_accepts_with_the_hand_worked_jct():
    # chain on 2x2 (intra 8e9 B/s): degree 2 on one server takes 3.5 s; para_min for beta 0.6 (3.6 s).
    decision = place(chain(), toy_cluster(2, 2, inter=(1e9, 0.0)), policy=make_heuristic("para_min"), beta=0.6, strategy="sipml")
    assert decision.accepted and decision.degree == 2
    assert decision.devices == ["s0-g0", "s0-g1"]
    assert decision.predicted_jct_s == pytest.approx(3.5) and decision.deadline_s == pytest.approx(3.6)
    assert decision.sequential_jct_s == 6.0 and decision.reason is None


def test_rejection_reasons():
    cluster = toy_cluster(2, 2, inter=(1e9, 0.0))
    unreachable = place(chain(), cluster, beta=0.5, strategy="sipml")  # 3.5 s is the best; 3 s asked
    assert (unreachable.accepted, unreachable.reason, unreachable.predicted_jct_s) == (False, "deadline_unreachable", 3.5)
    full = place(chain(), cluster, {"busy": {"s0-g0": 5, "s0-g1": 5, "s1-g0": None, "s1-g1": 1}}, strategy="sipml")
    assert (full.reason, full.predicted_jct_s) == ("does_not_fit", None)
    # fixed:4 spans both servers (too slow) although degree 2 on one server meets 3.6 s.
    declined = place(chain(), cluster, policy=make_heuristic("fixed:4"), beta=0.6, strategy="sipml")
    assert (declined.reason, declined.predicted_jct_s) == ("policy_declined", 3.5)
    # para_max takes the three free devices: 2/3 + 8e9 (2/3) / 1e9 + 8e9 (2/3) / 8e9 + 4/3 = 8 s > 5.94 s,
    # while (s1-g0, s1-g1) would take 3.5 s.
    para_max = place(chain(), cluster, ClusterState(busy={"s0-g0": 1.0}), policy=make_heuristic("para_max"), beta=0.99, strategy="sipml")
    assert para_max.reason == "policy_declined"


def test_unknown_device_and_bad_beta_are_clear_errors():
    with pytest.raises(PlacerError, match="unknown device 's9-g9'"):
        place(chain(), toy_cluster(1, 2), {"busy": {"s9-g9": 1.0}})
    with pytest.raises(PlacerError, match=r"beta must be in \(0, 1\]"):
        place(chain(), toy_cluster(1, 2), beta=1.5)


def test_cli_prints_the_decision_as_json(tmp_path):
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"busy": {"s0-g0": 100.0}}))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "place",
            "data/graphs/vgg16.json",
            "--cluster",
            "pacml",
            "--heuristic",
            "para_min",
            "--beta",
            "0.3",
            "--state",
            str(state),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["accepted"] and "s0-g0" not in decision["devices"]
    assert {"accepted", "job_id", "degree", "devices", "predicted_jct_s", "deadline_s", "reason"} <= set(decision)
    bad = subprocess.run([sys.executable, "-m", "placer", "place", "vgg16", "--beta", "2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "beta must be in (0, 1]" in bad.stderr and "Traceback" not in bad.stderr


def test_predict_with_a_degree_takes_the_fastest_device_type_and_names_it():
    import placer

    mixed = placer.predict(placer.resolve_graph("resnet50"), "mixed", 4)
    assert mixed.device_types == {"A100-80GB": 4} and mixed.servers == 1
    v100 = placer.predict(placer.resolve_graph("resnet50"), "mixed", ["s4-g0", "s4-g1", "s4-g2", "s4-g3"])
    assert v100.device_types == {"V100-16GB": 4} and v100.iteration_s > mixed.iteration_s


def _twelve_free() -> dict:
    """pacml with all but its first 12 devices busy for 100 s."""
    cluster = placer.load_cluster("pacml")
    return {"busy": {cluster.device_name(d): 100.0 for d in range(12, cluster.num_devices)}}


def test_place_answers_the_same_arguments_the_same_way_whatever_came_before():
    # lean:admit=0.5 declines a job longer than the median of the lengths it has seen while fewer than half
    # the devices are free (12 of 32): when the five shorter gnmt jobs were remembered across calls, alexnet
    # became "long" and the same query was declined (policy_declined).
    alexnet, gnmt, state = placer.resolve_graph("alexnet"), placer.resolve_graph("gnmt"), _twelve_free()
    first = placer.place(alexnet, "pacml", state, "lean:admit=0.5")
    for _ in range(5):
        placer.place(gnmt, "pacml", state, "lean:admit=0.5")
    again = placer.place(alexnet, "pacml", state, "lean:admit=0.5")
    assert first.accepted and first.reason is None
    assert again == first


def test_a_placer_keeps_what_its_policy_learns_across_queries():
    alexnet, gnmt, state = placer.resolve_graph("alexnet"), placer.resolve_graph("gnmt"), _twelve_free()
    session = placer.Placer.open("pacml", "lean:admit=0.5")
    assert session.place(alexnet, state).accepted
    for _ in range(5):
        session.place(gnmt, state)
    assert session.place(alexnet, state).reason == "policy_declined"  # now larger than the median size seen
    assert placer.Placer.open("pacml", "lean:admit=0.5").place(alexnet, state).accepted  # a new session starts afresh


def test_place_resets_a_policy_object_it_is_given():
    heuristic = make_heuristic("lean:admit=0.5")
    alexnet, gnmt, state = placer.resolve_graph("alexnet"), placer.resolve_graph("gnmt"), _twelve_free()
    for _ in range(5):
        placer.place(gnmt, "pacml", state, heuristic)
    assert placer.place(alexnet, "pacml", state, heuristic).accepted


def test_a_placement_beyond_the_calibrated_servers_says_so():
    import placer

    measured = {"s0-g0": 0.16, "s0-g0 s0-g1": 0.10, "s0-g0 s1-g0": 0.13, "s0-g0 s0-g1 s1-g0 s1-g1": 0.08}
    rows = [{"graph": "resnet50", "devices": devices, "step_time_s": t} for devices, t in measured.items()]
    calibrated = placer.calibrate("dgx8x8", rows)
    graph = placer.resolve_graph("resnet50")
    wide = place(graph, calibrated, policy=make_heuristic("fixed:24", max_degree=24), beta=1.0)
    narrow = place(graph, calibrated, policy=make_heuristic("fixed:8"), beta=1.0)
    assert wide.accepted and wide.extrapolated and wide.calibrated_max_servers == 2
    assert narrow.accepted and not narrow.extrapolated
    assert not place(graph, "dgx8x8", policy=make_heuristic("fixed:8"), beta=1.0).extrapolated  # nominal specs: no claim
