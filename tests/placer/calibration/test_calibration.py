"""Calibration: exact overhead terms, recovery of known constants, one-line refusals, physical bounds, Gavel."""

from __future__ import annotations

import csv
import math

import pytest
from typer.testing import CliRunner

import placer
from placer.calibration import CalibrationError, cluster_toml, fit_calibration
from placer.calibration.gavel import GPU_TYPES, validate_on_gavel
from placer.cli.app import app
from placer.cluster.devices import DEVICE_MODELS
from placer.cluster.topology import Cluster, load_cluster, parse_cluster_spec
from placer.common.errors import ClusterSpecError
from placer.cost import CostModel

PLACEMENTS = [[0], [0, 1], [0, 1, 2, 3], list(range(8)), [0, 8], [0, 8, 16, 24], [0, 1, 8, 9], list(range(16))]


def _with(base: str = "dgx8x8", **changes) -> Cluster:
    data = load_cluster(base).spec.model_dump()
    for path, value in changes.items():
        node = data
        *parents, leaf = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return Cluster(parse_cluster_spec(data))


def _rows(truth: Cluster, graphs=("resnet50", "bert_base"), batches=None) -> list[dict]:
    cost, rows = CostModel(truth), []
    batches = batches or {"resnet50": (128, 512), "bert_base": (16, 64)}
    for name in graphs:
        for batch in batches[name]:
            graph = placer.resolve_graph(name).with_batch_size(batch)
            for devices in PLACEMENTS:
                names = [truth.device_name(d) for d in devices]
                rows.append({"graph": name, "devices": names, "batch_size": batch, "step_time_s": cost.predict(graph, devices).iteration_s})
    return rows


def test_overhead_terms_add_exactly_what_they_say():
    graph = placer.resolve_graph("resnet50")
    plain = CostModel(_with(overheads__sync_s=0.0))
    synced = CostModel(_with(overheads__sync_s=0.25, overheads__iteration_s=0.125))
    assert synced.predict(graph, [0]).iteration_s == pytest.approx(plain.predict(graph, [0]).iteration_s + 0.125, abs=1e-12)
    assert synced.predict(graph, [0, 1], "dp").iteration_s == pytest.approx(
        plain.predict(graph, [0, 1], "dp").iteration_s + 0.375, abs=1e-12
    )


def test_a_jobs_compute_scale_and_overhead_apply_to_that_job_only():
    resnet, bert = placer.resolve_graph("resnet50"), placer.resolve_graph("bert_base")
    plain = CostModel(_with(overheads__sync_s=0.0))
    tuned = CostModel(_with(overheads__sync_s=0.0, jobs__resnet50__compute_scale=0.5, jobs__resnet50__iteration_s=0.5))
    one, data = plain.predict(resnet, [0]), plain.profile(resnet, "A100-80GB", 1.0).data_s
    assert one.iteration_s > data  # GPU-bound: the whole iteration is GPU time
    assert tuned.predict(resnet, [0]).iteration_s == pytest.approx(2 * one.iteration_s + 0.5, rel=1e-12)
    assert tuned.predict(bert, [0]).iteration_s == plain.predict(bert, [0]).iteration_s


def test_device_compute_scale_slows_matmuls_only():
    graph = placer.resolve_graph("resnet50")
    base, half = CostModel(_with()), CostModel(_with(**{"device_types__A100-80GB__compute_scale": 0.5}))
    profile = base.profile(graph, "A100-80GB", 1.0)
    matmul = float((profile.fw_s + profile.bw_s)[profile.is_matmul].sum())
    assert half.predict(graph, [0]).iteration_s == pytest.approx(base.predict(graph, [0]).iteration_s + matmul, rel=1e-9)


def test_calibration_recovers_known_constants():
    truth = _with(
        links__inter_server__bandwidth_Bps=25e9 / 12,
        overheads__sync_s=0.03,
        jobs__resnet50__compute_scale=0.8,
        jobs__resnet50__iteration_s=0.01,
        jobs__bert_base__compute_scale=0.7,
    )
    result = fit_calibration("dgx8x8", _rows(truth))
    fitted = {path: value for path, (_, value) in result.fitted.items()}
    assert fitted["links.inter_server.bandwidth_Bps"] == pytest.approx(25e9 / 12, rel=1e-3)
    assert fitted["overheads.sync_s"] == pytest.approx(0.03, rel=1e-3)
    assert fitted["jobs.resnet50.compute_scale"] == pytest.approx(0.8, rel=1e-3)
    assert fitted["jobs.resnet50.iteration_s"] == pytest.approx(0.01, abs=1e-4)  # the priors shrink a little toward nominal
    assert fitted["jobs.bert_base.compute_scale"] == pytest.approx(0.7, rel=1e-3)
    assert max(abs(result.errors)) < 1e-3 and max(abs(result.cv_errors)) < 1e-2  # cv: each shape predicted by a refit without it
    assert min(result.nominal_errors) < -0.3  # the nominal model was far off: the fit did the work


def test_an_opted_in_file_gets_its_links_efficiency_and_overlap_fitted():
    """A ``[communication]`` table opts dgx8x8 into issue 51's terms: efficiency and overlap are fitted (not the line
    rate), written back as an ordinary file; the same rows on the file as shipped fit bandwidth_Bps and no overlap."""
    base = _with(communication__overlap=1.0)
    truth = _with(
        communication__overlap=0.5,
        links__inter_server__efficiency=1 / 12,
        overheads__sync_s=0.03,
        jobs__resnet50__compute_scale=0.8,
        jobs__bert_base__compute_scale=0.7,
    )
    rows = _rows(truth)
    result = fit_calibration(base, rows, cross_validate=False)
    fitted = {path: value for path, (_, value) in result.fitted.items()}
    assert fitted["links.inter_server.efficiency"] == pytest.approx(1 / 12, rel=2e-2)
    assert fitted["communication.overlap"] == pytest.approx(0.5, abs=0.05)  # its prior (centred on 1) pulls a little
    assert "links.inter_server.bandwidth_Bps" not in fitted and max(abs(result.errors)) < 1e-2
    assert result.cluster.spec.links.inter_server.bandwidth_Bps == base.spec.links.inter_server.bandwidth_Bps  # the line rate stays
    assert result.cluster.spec.detailed_comm
    plain = fit_calibration("dgx8x8", rows, cross_validate=False)
    assert "links.inter_server.bandwidth_Bps" in plain.fitted and not any("efficiency" in p or "overlap" in p for p in plain.fitted)


def test_fitted_values_stay_physical():
    faster = _with(links__inter_server__bandwidth_Bps=100e9, links__intra_server__bandwidth_Bps=900e9)  # above line rate
    result = fit_calibration("dgx8x8", _rows(faster, graphs=("bert_base",)))
    nominal = load_cluster("dgx8x8").spec.links
    links = result.cluster.spec.links
    assert links.inter_server.bandwidth_Bps <= nominal.inter_server.bandwidth_Bps
    assert links.intra_server.bandwidth_Bps <= nominal.intra_server.bandwidth_Bps
    with pytest.raises(ClusterSpecError, match="above its datasheet peak"):
        _with(**{"device_types__A100-80GB__compute_scale": 5.0})


def test_the_written_file_is_an_ordinary_cluster_file(tmp_path):
    truth = _with(links__inter_server__bandwidth_Bps=5e9, jobs__resnet50__compute_scale=0.9)
    result = fit_calibration("dgx8x8", _rows(truth, graphs=("resnet50",)), cross_validate=False)
    path = tmp_path / "calibrated.toml"
    path.write_text(cluster_toml(result.cluster.spec, result.report()))
    assert load_cluster(path).spec == result.cluster.spec
    text = path.read_text()
    assert "# Calibrated by `placer calibrate` from 16 measured step time(s)" in text and "links.inter_server.bandwidth_Bps" in text


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "no measurements"),
        ([{"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": 0.3}], "cannot fit 1 constant"),
        ([{"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": math.nan}], "finite"),
        ([{"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": -1}], "greater than 0"),
        ([{"graph": "resnet50", "devices": "s0-g0 s0-g0", "step_time_s": 1}], "appears twice"),
        ([{"graph": "resnet50", "devices": ["s9-g9"], "step_time_s": 1}], "unknown device 's9-g9'"),
        ([{"graph": "nope", "devices": ["s0-g0"], "step_time_s": 1}], "unknown graph 'nope'"),
        ([{"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": 1, "precision": "fp8"}], "unknown precision"),
        ([{"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": 1, "colour": "red"}], "colour"),
        (
            [
                {"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": 0.3},
                {"graph": "resnet50", "devices": ["s1-g3"], "step_time_s": 0.9},
                {"graph": "resnet50", "devices": ["s0-g1"], "step_time_s": 0.3},
            ],
            "same job on the same placement shape 3.0x apart",
        ),
        (
            [
                {"graph": "resnet50", "devices": ["s0-g0"], "step_time_s": 1e-4},
                {"graph": "resnet50", "devices": ["s0-g1"], "batch_size": 256, "step_time_s": 0.3},
                {"graph": "resnet50", "devices": ["s0-g2"], "batch_size": 512, "step_time_s": 0.6},
            ],
            "faster than resnet50 at batch 128 can run on these devices at their datasheet peaks",
        ),
    ],
)
def test_bad_measurements_are_refused_in_one_line(rows, message):
    with pytest.raises(CalibrationError, match=message) as info:
        fit_calibration("dgx8x8", rows)
    assert "\n" not in str(info.value)


def test_cli_writes_a_cluster_file_and_refuses_bad_csvs(tmp_path):
    truth = _with(links__inter_server__bandwidth_Bps=5e9)
    path = tmp_path / "m.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["graph", "devices", "batch_size", "precision", "step_time_s"])
        for row in _rows(truth, graphs=("resnet50",)):
            writer.writerow([row["graph"], " ".join(row["devices"]), row["batch_size"], "", row["step_time_s"]])
    out = tmp_path / "c.toml"
    result = CliRunner().invoke(app, ["calibrate", str(path), "--cluster", "dgx8x8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_cluster(out).spec.links.inter_server.bandwidth_Bps == pytest.approx(5e9, rel=1e-2)  # the prior shrinks it a hair
    (tmp_path / "bad.csv").write_bytes(b"\xff\xfe binary")
    bad = CliRunner().invoke(app, ["calibrate", str(tmp_path / "bad.csv"), "--out", str(out)])
    assert isinstance(bad.exception, placer.PlacerError) and "not UTF-8" in str(bad.exception)
    (tmp_path / "cols.csv").write_text("graph,step_time_s\nresnet50,1\n")
    cols = CliRunner().invoke(app, ["calibrate", str(tmp_path / "cols.csv"), "--out", str(out)])
    assert isinstance(cols.exception, placer.PlacerError) and "missing column(s) devices" in str(cols.exception)


def test_catalogue_has_the_common_cloud_gpus():
    for name, fp32, memory in (
        ("K80", 4.37e12, 12e9),
        ("P100", 9.3e12, 16e9),
        ("T4", 8.1e12, 16e9),
        ("A10", 31.2e12, 24e9),
        ("L4", 30.3e12, 24e9),
    ):
        model = DEVICE_MODELS[name]
        assert model.peaks["fp32"] == fp32 and model.memory_bytes == memory
    assert DEVICE_MODELS["K80"].effective_precision("bf16") == "fp32" and DEVICE_MODELS["T4"].effective_precision("bf16") == "fp16"


@pytest.mark.parametrize("gpu", GPU_TYPES)
def test_gavel_held_out_rows_after_calibrating_on_a_few(gpu):
    """Issue 21's target: a median of <= 20 % on held-out rows (docs/cost-model.md: 11.9 / 12.3 / 18.8 %)."""
    validation = validate_on_gavel(gpu)
    summary = validation.summary()
    assert summary["rows"] >= 100
    assert summary["median"] <= 0.20 and summary["median"] < summary["nominal_median"] / 2


def test_synthetic_testbed_extrapolates_from_two_servers_to_sixteen():
    """Issue 30: calibrated on 4 placements per model of at most 2 servers, every shape up to 16 servers within 10 %."""
    from placer.calibration.testbed import validate_on_testbed

    validation = validate_on_testbed()
    summary = validation.summary()
    assert summary["rows"] >= 70 and summary["max"] <= 0.10 and summary["nominal_median"] > 0.4
    assert validation.calibration.max_servers == 2
    assert validation.calibration.identified["links.inter_server.latency_s"] == "prior"  # 2-server rows cannot tell it from bandwidth
    assert validation.calibration.identified["links.inter_server.bandwidth_Bps"] == "rows"


def test_rows_that_cannot_separate_latency_from_bandwidth_get_the_bandwidth_explanation():
    """Only 2-server rows, noisy: the old free fit put one seed's cross-server cost into 1.5 ms of latency (15 % / 44 %)."""
    from placer.calibration.testbed import TRUTH, validate_on_testbed

    for seed in range(4):
        validation = validate_on_testbed(seed=seed, noise=0.10)
        fitted = validation.calibration.fitted
        assert fitted["links.inter_server.latency_s"][1] < 1e-4
        assert fitted["links.inter_server.bandwidth_Bps"][1] == pytest.approx(TRUTH[("links", "inter_server", "bandwidth_Bps")], rel=0.2)
        summary = validation.summary()
        assert summary["median"] <= 0.10 and summary["p90"] <= 0.15 and summary["median"] < summary["nominal_median"]


def test_cross_validation_leaves_a_shape_out_and_refits_even_at_the_minimum_row_count():
    """Rows = constants + 1: the old leave-one-out skipped the refit and printed the in-sample error."""
    truth = _with(links__inter_server__bandwidth_Bps=25e9 / 12, jobs__resnet50__compute_scale=0.8)
    cost, graph = CostModel(truth), placer.resolve_graph("resnet50")
    rows = [
        {"graph": "resnet50", "devices": [truth.device_name(d) for d in devices], "step_time_s": cost.predict(graph, devices).iteration_s}
        for devices in ([0], [1], [0, 8], [0, 16], [8, 24])
    ]
    result = fit_calibration("dgx8x8", rows)
    assert set(result.fitted) == {"links.inter_server.bandwidth_Bps", "jobs.resnet50.compute_scale"}
    assert result.cv_method.startswith("leave one placement shape out (2 shapes")
    # the 2-server shape held out: nothing informs the bandwidth, the prior keeps it at line rate, and the error shows it
    spread = [i for i, r in enumerate(rows) if len(r["devices"]) > 1]
    assert min(abs(result.cv_errors[spread])) > 0.05 and max(abs(result.errors)) < 0.01
    assert any("cross-validated" in line for line in result.outcome())


def test_a_constant_on_its_bound_is_flagged():
    faster = _with(links__inter_server__bandwidth_Bps=100e9)  # the rows want more than the file's line rate
    result = fit_calibration("dgx8x8", _rows(faster, graphs=("bert_base",)), cross_validate=False)
    assert result.at_bound["links.inter_server.bandwidth_Bps"] == "upper"
    assert any("AT ITS UPPER BOUND" in line for line in result.report())
    assert "links.intra_server.bandwidth_Bps" not in result.at_bound  # left at a nominal that is its bound: not news


@pytest.mark.parametrize("gpu", GPU_TYPES)
def test_gavel_extrapolation_from_one_and_two_servers(gpu):
    """Fit on rows on one server or spread over 2, predict those spread over 4 and 8 (docs/cost-model.md)."""
    from placer.calibration.gavel import validate_extrapolation

    summary = validate_extrapolation(gpu).summary()
    assert summary["rows"] >= 30 and summary["median"] <= 0.20 and summary["median"] < summary["nominal_median"] / 2


def test_predictions_beyond_the_calibrated_servers_say_so(tmp_path):
    """issue 30: a calibrated file records the shapes it rests on; placer predict flags a placement beyond them."""
    from placer.api.query import predict

    truth = _with(links__inter_server__bandwidth_Bps=5e9)
    rows = [r for r in _rows(truth, graphs=("resnet50",)) if len({d.split("-")[0] for d in r["devices"]}) <= 2]
    result = fit_calibration("dgx8x8", rows)
    calibrated = result.cluster.spec.calibrated
    assert calibrated.max_servers == 2 and calibrated.rows == len(rows) and calibrated.cv_p90 is not None
    path = tmp_path / "c.toml"
    path.write_text(cluster_toml(result.cluster.spec, result.report()))
    assert load_cluster(path).spec == result.cluster.spec  # [calibrated] round-trips
    graph = placer.resolve_graph("resnet50")
    near, far = predict(graph, result.cluster, ["s0-g0", "s1-g0"]), predict(graph, result.cluster, ["s0-g0", "s1-g0", "s2-g0", "s3-g0"])
    assert not near.extrapolated and far.extrapolated and far.calibrated_max_servers == 2
    low, high = far.interval_s
    assert low < far.iteration_s < high and (high - low) / far.iteration_s > (near.interval_s[1] - near.interval_s[0]) / near.iteration_s
    plain = predict(graph, "dgx8x8", ["s0-g0", "s1-g0", "s2-g0"])
    assert not plain.extrapolated and plain.interval_s is None and plain.calibrated_max_servers is None
    out = CliRunner().invoke(app, ["predict", "resnet50", "--cluster", str(path), "--devices", "s0-g0,s1-g0,s2-g0"])
    assert out.exit_code == 0 and '"extrapolated": true' in out.output


def test_two_server_rows_never_buy_a_latency_explanation():
    """Even a truth of 1 ms per message: 2-server rows cannot show how the cost grows with servers, so bandwidth explains it."""
    import numpy as np

    from placer.calibration import testbed

    truth = testbed.true_cluster({("links", "inter_server", "latency_s"): 1e-3})
    rows = testbed.rows(testbed.CALIBRATION_SHAPES, truth, np.random.default_rng(0), noise=0.0)
    result = fit_calibration(testbed.nominal_cluster(), rows, cross_validate=False)
    assert result.fitted["links.inter_server.latency_s"][1] < 1e-4 and result.notes == ()
    assert result.fitted["links.inter_server.bandwidth_Bps"][1] < 0.8 * 6.25e9  # the cross-server cost went to bandwidth


def test_shared_constants_stay_nominal_when_refitting_them_predicts_left_out_shapes_worse():
    """Rows that are the nominal model plus 30 % noise: refitting the links predicts held-out shapes worse than holding them."""
    import numpy as np

    from placer.calibration import testbed

    rows = testbed.rows(testbed.CALIBRATION_SHAPES, testbed.nominal_cluster(), np.random.default_rng(4), noise=0.3)
    result = fit_calibration(testbed.nominal_cluster(), rows)
    assert all(path.startswith("jobs.") for path in result.fitted)
    assert any("shared constants held at the file's values: 20.9% cross-validated" in note for note in result.notes)
    assert result.cluster.spec.links == testbed.nominal_cluster().spec.links


def test_one_free_constant_on_many_rows_fits():
    """41+ rows that inform one constant only (one graph, one batch size, one device): the fit used a sparse Jacobian there,
    and scipy's ``lsmr`` trust-region solver fails on one variable (``IndexError: index 1 is out of bounds``); the service's
    refit then kept its previous model for good (audit 2026-11-26, finding b)."""
    cluster = load_cluster("dgx8x8")
    graph = placer.resolve_graph("resnet50").with_batch_size(128)
    predicted = CostModel(cluster).predict(graph, [0]).iteration_s
    ratios = [1.2 + 0.2 * i / 40 for i in range(41)]
    rows = [{"graph": "resnet50", "devices": [cluster.device_name(0)], "batch_size": 128, "step_time_s": predicted * r} for r in ratios]
    calibration = fit_calibration(cluster, rows)
    assert list(calibration.fitted) == ["jobs.resnet50.compute_scale"]
    fitted = CostModel(calibration.cluster).predict(graph, [0]).iteration_s
    assert fitted == pytest.approx(predicted * 1.3, rel=0.03)
