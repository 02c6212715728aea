"""What a new user hit in the first hour on main (issue 81): each now warns, says who won, or fits the terminal."""

from __future__ import annotations

import pytest

from tests.placer.cli.test_honest_edges import run

SMALL = ["--jobs", "5", "--seeds", "1", "--beta-dist", "C", "--graphs", "alexnet", "--cluster", "dgx8x8", "--queue", "edf-bf"]
OUTSIDE = (
    "warning: the shipped policy 'learned' was not trained on size const (its card placer.card.json: dgx8x8/mixed, "
    "size loguniform:0.1:10, queue edf-bf, load 0.5-1.3); --size loguniform:0.1:10 matches it"
)


@pytest.mark.parametrize(("size", "warned"), [([], True), (["--size", "loguniform:0.1:10"], False)])
def test_the_shipped_policy_outside_its_trained_sizes_says_so(size, warned, tmp_path):
    result = run("evaluate", *SMALL, *size, "--policies", "learned,lean", "--out", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    assert (OUTSIDE in result.stderr.splitlines()) is warned
    assert "not trained on" not in result.stderr or warned


def test_a_policy_file_of_ones_own_or_a_heuristic_alone_is_not_checked_against_the_card(tmp_path):
    result = run("evaluate", *SMALL, "--policies", "lean", "--out", str(tmp_path / "ev"))
    assert result.returncode == 0 and "not trained on" not in result.stderr


def test_the_readme_evaluates_the_shipped_policy_where_it_was_trained():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("placer evaluate") and "learned" in line]
    assert commands and all("--size loguniform:0.1:10" in c or "--policy-file" in c for c in commands)


def test_the_cards_trained_regimes_are_its_settings_merged_into_its_base():
    from placer.cli.trained import trained_regimes

    env = {"clusters": ["a"], "loads": [0.5, 1.3], "workload": {"size": ["loguniform:0.1:10"], "queue": ["edf-bf"]}}
    env["settings"] = [{}, {}, {"clusters": ["p"], "queue": "none", "size": "const", "loads": [0.9]}]
    regimes = trained_regimes({"teacher_table": {"tuned_for": {"env": env}}})
    assert regimes == [
        {"cluster": ["a"], "size": ["loguniform:0.1:10"], "queue": ["edf-bf"], "loads": [0.5, 1.3]},
        {"cluster": ["p"], "size": ["const"], "queue": ["none"], "loads": [0.9]},
    ]
    assert trained_regimes({}) == []


def paired_folder(folder, blocking: dict) -> None:
    """An evaluation written by hand: ``blocking[policy][load]`` the blocking rate of seeds 0, 1, 2, beta A."""
    from placer.evaluate import EvaluationConfig, EvaluationResult, write_results
    from placer.sim.metrics import compute_metrics
    from tests.placer.evaluate.test_jobs import LEAN

    loads = sorted({load for per in blocking.values() for load in per})
    config = EvaluationConfig.model_validate(
        {"cluster": "dgx8x8", "policies": list(blocking), "seeds": 3, "workload": {"jobs": 3, "beta_dists": ["A"]}, "loads": loads}
    )
    result = EvaluationResult(config)
    metrics = compute_metrics(LEAN, [(0.0, 0)], 8).to_dict()
    for policy, per in blocking.items():
        for load, rates in per.items():
            for seed, rate in enumerate(rates):
                run = {"policy": policy, "seed": seed, "beta_dist": "A", "load": load, "cluster": "dgx8x8", **metrics}
                result.runs.append(run | {"blocking_rate": rate})
    write_results(result, folder)


def test_report_against_says_who_blocks_fewer_and_whether_the_interval_resolves_it(tmp_path):
    best = {0.5: [0.05, 0.05, 0.05], 0.9: [0.10, 0.12, 0.14]}
    learned = {0.5: [0.06, 0.04, 0.08], 0.9: [0.08, 0.10, 0.12]}  # 0.9: 0.02 fewer on every stream; 0.5: +0.01 -0.01 +0.03
    paired_folder(tmp_path, {"best": best, "learned": learned})
    result = run("report", str(tmp_path), "--against", "best")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("- learned against best")]
    assert line == (
        "- learned against best, blocking: load 0.5 0.010 more (not resolved); load 0.9 0.020 fewer (resolved); "
        "all loads 0.005 fewer (not resolved)"
    )
    assert "- (resolved: the paired 95% interval excludes 0; one stream gives no interval)" in result.stdout.splitlines()


def test_a_verdict_without_an_interval_resolves_nothing():
    from placer.cli.verdicts import cell

    assert cell(0.0, float("nan")) == ("as many", "not resolved")
    assert cell(-0.02, 0.0) == ("0.020 fewer", "resolved") and cell(0.01, 0.05) == ("0.010 more", "not resolved")


PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:00,2592000.0,1,2592000.0,a
2017-10-01 01:00:00,3600.0,1,3600.0,b
2017-10-01 02:00:00,3600.0,1,3600.0,b
2017-10-01 03:00:00,3600.0,1,3600.0,b
"""
WINDOW_ADVICE = (
    "warning: most of this window's work is blocked whatever the policy: one virtual cluster's jobs (import with --vc b, "
    "3 of these jobs) or a later --start (a trace's first rows hold the jobs already running when it began) makes it "
    "meaningful (docs/traces.md)"
)


def test_a_raw_trace_window_says_what_it_holds_and_proposes_a_virtual_cluster(tmp_path):
    (tmp_path / "philly.csv").write_text(PHILLY)
    out = tmp_path / "replay.csv"
    raw = run("import", "trace", "philly", str(tmp_path / "philly.csv"), "--out", str(out))
    assert raw.returncode == 0, raw.stderr
    window = "the window: 4 jobs over 3.0 h (1.3 an hour), 25% of them longer than a day on one GPU; offered load 2.82 on 64 GPUs"
    assert window in raw.stdout.splitlines()
    assert raw.stderr.strip().splitlines() == [WINDOW_ADVICE]
    one = run("import", "trace", "philly", str(tmp_path / "philly.csv"), "--vc", "b", "--out", str(out))
    assert one.returncode == 0 and one.stderr == ""
    assert (
        "the window: 3 jobs over 2.0 h (1.5 an hour), 0% of them longer than a day on one GPU; offered load 0.02 on 64 GPUs" in one.stdout
    )


def test_evaluate_trace_notes_the_window_and_warns_when_it_means_little(tmp_path):
    from placer.workloads.traces.window import Window, advice

    (tmp_path / "philly.csv").write_text(PHILLY)
    assert run("import", "trace", "philly", str(tmp_path / "philly.csv"), "--out", str(tmp_path / "r.csv")).returncode == 0
    result = run(
        "evaluate",
        "--cluster",
        "dgx8x8",
        "--trace",
        str(tmp_path / "r.csv"),
        "--seeds",
        "1",
        "--policies",
        "lean",
        "--out",
        str(tmp_path / "ev"),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert (
        "note: the window: 4 jobs over 3.0 h (1.3 an hour), 25% of them longer than a day on one GPU; offered load 2.82 on 64 GPUs" in lines
    )
    assert any(
        line.startswith(
            "warning: most of this window's work is blocked whatever the policy: one virtual cluster's jobs (import with --vc NAME)"
        )
        for line in lines
    )
    assert advice(Window(10, 5.0, 0.0, 0.9, 64)) is None


def rendered(table, width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=width, record=True, emoji=False)
    console.print(table)
    return console.export_text().splitlines()


def test_the_multi_load_evaluate_table_fits_80_columns_its_ci_on_a_second_line(tmp_path):
    import json

    from placer.cli.evaluate import summary_table
    from placer.evaluate import read_results

    names = ["learned", "best", "lean:admit=0.9+best_fit"]
    paired_folder(tmp_path, {name: {0.5: [0.05, 0.06, 0.07], 0.9: [0.10, 0.121, 0.14], 1.3: [0.2, 0.3, 0.25]} for name in names})
    result = read_results(json.loads((tmp_path / "results.json").read_text()), tmp_path)
    lines = rendered(summary_table(result, width=80), 80)
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)
    assert lines[1].split() == ["load", "beta", "policy", "blocking", "avoid.", "jobs/h", "JCT", "s", "util."]
    assert [line.split()[2] for line in lines[3::2]] == names * 3  # every name whole, its row's CI on the line below
    assert all(line.split()[0] == "±" for line in lines[4::2]) and len(lines) == 3 + 2 * 9
    wide = rendered(summary_table(result, width=200), 200)
    assert "0.060 ± 0.025" in wide[3] and len(wide) == 3 + 9  # one line a row where it fits


def test_placer_graphs_keeps_every_name_whole_in_80_columns():
    from placer.cli.catalog import graphs_table
    from placer.graphs.catalog import shipped_graph_names

    lines = rendered(graphs_table(width=80), 80)
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)
    assert [line.split()[0] for line in lines[2:]] == list(shipped_graph_names())


def test_docs_and_the_checker_agree_that_speed_is_required_beside_a_model(tmp_path):
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "clusters.md").read_text()
    (row,) = [line for line in docs.splitlines() if line.startswith("| `device_types.NAME.speed`")]
    assert "(required)" in row and "required even beside a `model`" in row and "`speed` is not used" not in docs
    cluster = tmp_path / "c.toml"
    cluster.write_text('name = "c"\n[device_types.g]\nmemory_bytes = 80e9\nmodel = "H100-SXM"\n[[servers]]\ncount = 1\ndevices = {g = 2}\n')
    result = run("clusters", "check", str(cluster))
    assert result.returncode == 2 and "speed" in result.stderr


def test_a_trace_evaluation_is_titled_by_its_trace_and_a_multi_load_plot_by_every_load(tmp_path):
    import json

    from placer.cli.evaluate import summary_table
    from placer.evaluate import read_results
    from placer.evaluate.plots import setting

    paired_folder(tmp_path, {"lean": {0.5: [0.1, 0.1, 0.1], 0.9: [0.2, 0.2, 0.2]}})
    result = read_results(json.loads((tmp_path / "results.json").read_text()), tmp_path)
    assert setting(result) == "dgx8x8, loads 0.5, 0.9, queue none, size const, auto cost model"  # the CDFs pool them all
    traced = result.config.model_copy(update={"trace": "runs/philly.csv", "loads": ()})
    result.config = traced
    assert summary_table(result, width=200).title.startswith("dgx8x8, trace philly.csv, ")
    assert setting(result).startswith("dgx8x8, trace philly.csv, ")


def test_help_texts_show_no_rest_backticks_and_import_names_traces():
    from typer.testing import CliRunner

    from placer.cli import _register_plugins, app

    _register_plugins()
    for command in (["clusters", "--help"], ["--help"], ["import", "--help"]):
        result = CliRunner().invoke(app, command, env={"COLUMNS": "200"})
        assert result.exit_code == 0 and "``" not in result.output
    top = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "placer clusters check FILE reads" in CliRunner().invoke(app, ["clusters", "--help"], env={"COLUMNS": "200"}).output
    assert "public cluster traces" in top


def test_progress_bars_are_off_where_their_stream_is_no_terminal():
    import io

    from tqdm.auto import tqdm

    from placer.cli.app import progress_bar
    from placer.common.progress import bar_off

    assert bar_off(False) is True and bar_off(True) is None
    log = io.StringIO()
    for _ in tqdm(range(3), file=log, disable=bar_off(True)):
        pass
    assert log.getvalue() == ""  # a log (no terminal) gets no carriage returns
    assert progress_bar().disable  # the CLI's bar: stderr is no terminal under pytest


def test_a_folder_named_placer_that_shadows_the_package_is_one_clear_line(monkeypatch, tmp_path):
    import sys
    import types

    from placer.cli import shadowed

    assert shadowed() is None
    fake = types.ModuleType("placer")
    fake.__path__ = [str(tmp_path / "placer")]  # a namespace package: no __file__, no API
    monkeypatch.setitem(sys.modules, "placer", fake)
    assert shadowed() == (
        f"a folder named placer ({tmp_path / 'placer'}) shadows the installed package: 'import placer' finds it, not placer's API; "
        "run from another directory or rename the folder"
    )
