import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "placer"]


def run(*args, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_evaluate_writes_results_summary_and_plots(tmp_path):
    out = tmp_path / "eval"
    result = run(
        "evaluate",
        "--graphs",
        "alexnet,gnmt",
        "--beta-dist",
        "A,D",
        "--jobs",
        "40",
        "--seeds",
        "2",
        "--policies",
        "para_max,para_min,lean",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert len(runs) == 2 * 2 * 3
    for entry in runs:
        for key in ("policy", "seed", "beta_dist", "load", "blocking_rate", "throughput_jobs_per_hour", "mean_jct_s", "utilization"):
            assert key in entry
        assert 0 <= entry["blocking_rate"] <= 1
    assert (out / "summary.csv").read_text().startswith("beta_dist,policy,seeds,blocking_rate")
    for png in ("blocking_rate.png", "throughput.png", "utilization.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "para_min" in result.stdout


def report_cell(tmp_path, streams, against: str) -> str:
    """lean's paired difference against ``against`` from one evaluation holding both."""
    both = run("evaluate", *streams, "--policies", f"lean,{against}", "--out", str(tmp_path / "both"))
    assert both.returncode == 0, both.stderr
    report = run("report", str(tmp_path / "both"), "--against", against)
    return [line for line in report.stdout.splitlines() if line.startswith("| lean |")][-1].split(" | ")[1]


def test_queue_evaluation_in_processes_and_the_paired_report(tmp_path):
    out = tmp_path / "q"
    args = ["--graphs", "alexnet,resnet18", "--beta-dist", "B", "--jobs", "40", "--seeds", "2", "--queue", "edf-bf:8"]
    args += ["--size", "loguniform:0.1:10", "--cluster", "dgx8x8"]
    streams, args = args, [*args, "--policies", "lean,lean@edf,lean:admit=0.9"]
    result = run("evaluate", *args, "--workers", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    serial = run("evaluate", *args, "--out", str(tmp_path / "s"))
    assert serial.returncode == 0, serial.stderr
    assert json.loads((out / "results.json").read_text())["runs"] == json.loads((tmp_path / "s/results.json").read_text())["runs"]
    report = run("report", str(out), "--against", "lean")
    assert report.returncode == 0, report.stderr
    assert "queue edf-bf:8, size loguniform:0.1:10" in report.stdout and "Blocking rate minus lean's" in report.stdout
    rows = [line for line in report.stdout.splitlines() if line.startswith("| lean@edf |")]
    assert len(rows) == 2  # once in the summary, once paired
    bad = run("report", str(out), "--against", "magic")
    assert bad.returncode == 2 and "is not one of the evaluated policies" in bad.stderr and bad.stdout == ""  # no table before it
    later = run("evaluate", *streams, "--policies", "para_min,lean", "--out", str(tmp_path / "later"))  # the same streams, later
    assert later.returncode == 0, later.stderr
    merged = run("report", str(out), str(tmp_path / "later"), "--against", "para_min")
    assert merged.returncode == 0, merged.stderr
    assert [line.split(" |")[0] for line in merged.stdout.splitlines() if line.startswith("| lean")][:3] == [
        "| lean",
        "| lean@edf",
        "| lean:admit=0.9",
    ]
    paired = [line for line in merged.stdout.splitlines() if line.startswith("| lean |")][-1]
    assert paired.split(" | ")[1] == report_cell(tmp_path, streams, "para_min")  # lean taken from the first evaluation, paired by seed
    fewer = run("evaluate", *[a if a != "2" else "1" for a in streams], "--policies", "para_min", "--out", str(tmp_path / "fewer"))
    assert fewer.returncode == 0, fewer.stderr
    shared = run("report", str(out), str(tmp_path / "fewer"), "--against", "para_min")  # pairs on seed 0, the one both have
    assert shared.returncode == 0, shared.stderr
    assert "40 jobs x 1 seed," in shared.stdout
    second = [*streams[: streams.index("--seeds")], "--first-seed", "1", "--seeds", "1", *streams[streams.index("--seeds") + 2 :]]
    apart = run("evaluate", *second, "--policies", "para_min", "--out", str(tmp_path / "apart"))
    assert apart.returncode == 0, apart.stderr
    on_seed1 = run("report", str(out), str(tmp_path / "apart"))  # pairs on seed 1, the one both have, and says which
    assert on_seed1.returncode == 0 and "40 jobs x 1 seed (seed 1)," in on_seed1.stdout, on_seed1.stderr
    seed0 = {r["policy"]: r["blocking_rate"] for r in json.loads((out / "results.json").read_text())["runs"] if r["seed"] == 0}
    seed0 |= {r["policy"]: r["blocking_rate"] for r in json.loads((tmp_path / "fewer/results.json").read_text())["runs"]}
    paired_on_seed0 = [line for line in shared.stdout.splitlines() if line.startswith("| lean |")][-1].split(" | ")[1]
    assert paired_on_seed0.startswith(f"{seed0['lean'] - seed0['para_min']:+.3f} ± n/a")  # one seed: no interval
    other = run("evaluate", *streams, "--policies", "lean", "--load", "0.5", "--out", str(tmp_path / "other"))
    refused = run("report", str(out), str(tmp_path / "other"))
    assert other.returncode == 0 and refused.returncode == 2 and "differ in load" in refused.stderr


def test_a_planner_reports_how_often_it_left_its_base_rule(tmp_path):
    out = tmp_path / "h"
    args = ["--graphs", "alexnet,resnet18", "--beta-dist", "B", "--jobs", "30", "--seeds", "1", "--cluster", "dgx8x8"]
    result = run("evaluate", *args, "--policies", "lean,hindsight:h=4", "--out", str(out))
    assert result.returncode == 0, result.stderr
    runs = {r["policy"]: r for r in json.loads((out / "results.json").read_text())["runs"]}
    assert "policy_stats" not in runs["lean"]
    stats = runs["hindsight:h=4"]["policy_stats"]
    assert stats["offers"] == 30  # the loss system: one offer per arrival
    assert set(stats["deviations"]) <= {"decline", "start", "fewer devices", "more devices", "other devices"}
    report = run("report", str(out))
    assert report.returncode == 0, report.stderr
    table = report.stdout.split("Offers where a planner left its base rule")[1]
    share = sum(stats["deviations"].values()) / 30
    assert [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| ")][1:] == ["| hindsight:h=4"]
    assert f"| {share:.1%} of 30 (" in table


def test_evaluate_is_deterministic(tmp_path):
    args = ["evaluate", "--graphs", "vgg16", "--beta-dist", "C", "--jobs", "50", "--seeds", "1", "--policies", "random,lean"]
    a = run(*args, "--out", str(tmp_path / "a"))
    b = run(*args, "--out", str(tmp_path / "b"))
    assert a.returncode == b.returncode == 0
    runs_a = json.loads((tmp_path / "a/results.json").read_text())["runs"]
    runs_b = json.loads((tmp_path / "b/results.json").read_text())["runs"]
    assert runs_a == runs_b


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--cluster", "nope"], "unknown cluster preset 'nope'"),
        (["evaluate", "--graphs", "nograph"], "unknown graph 'nograph'"),
        (["evaluate", "--beta-dist", "Z"], "bad beta distribution 'Z'"),
        (["evaluate", "--policies", "magic"], "unknown policy 'magic'"),
        (["evaluate", "--load", "-1"], "--load -1: an offered load is above 0 and below 100"),
        (["evaluate", "--queue", "lifo"], "bad queue 'lifo'"),
        (["evaluate", "--size", "loguniform:5:1"], "bad size distribution 'loguniform:5:1'"),
        (["evaluate", "--policies", "lean@lifo"], "bad queue discipline 'lifo'"),
        (["evaluate", "--policies", "lookahead:k=0"], "unknown policy 'lookahead:k=0'"),
        (["evaluate", "--policies", "learned,learned:nonsense"], "unknown policy 'learned:nonsense': use learned"),
        (["evaluate", "--policies", "lean:admit=2"], "unknown policy 'lean:admit=2'"),
        (["evaluate", "--policies", "learned:below=0"], "unknown policy 'learned:below=0': use learned"),
        (["evaluate", "--first-seed", "-1"], "--first-seed: seeds 0 to 9,999 (from 10,000: a training's validation streams)"),
        (["evaluate", "--first-seed", "9999", "--seeds", "2"], "--first-seed: seeds 0 to 9,999"),
        (["bound", "--first-seed", "-1"], "--first-seed: seeds 0 to 9,999"),
        (["import", "pipedream", "missing.txt", "--out", "x.json"], "cannot read PipeDream file"),
    ],
)
def test_bad_input_is_one_line_not_a_traceback(args, message, tmp_path):
    result = run(*args, "--out", str(tmp_path / "o")) if args[0] == "evaluate" else run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_import_pipedream_round_trips(tmp_path, pipedream_dir):
    out = tmp_path / "g.json"
    result = run("import", "pipedream", str(pipedream_dir / "alexnet.txt"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    from placer import load_job_graph

    assert load_job_graph(out).key == load_job_graph("data/graphs/alexnet.json").key


def test_core_imports_neither_torch_nor_gymnasium():
    code = (
        "import sys, placer, placer.cli, placer.evaluate, placer.api, placer.serve.http\n"
        "heavy = {m for m in sys.modules if m.split('.')[0] in {'torch', 'gymnasium', 'stable_baselines3'}}\n"
        "heavy |= {m for m in sys.modules if m.startswith(('placer.envs', 'placer.policies'))}\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Missing command"),
        (["--bogus"], "No such option: --bogus"),
        (["nosuch"], "No such command 'nosuch'"),
        (["predict"], "Missing argument 'graph'"),
        (["predict", "resnet50", "--degree"], "requires an argument"),
        (["evaluate", "--jobs", "abc"], "Invalid value for '--jobs'"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("placer ")


def test_more_mistakes_are_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "facmod.py").write_text("def bad():\n    raise RuntimeError('boom')\n")
    (tmp_path / "p.txt").write_text(
        "node1 -- Linear -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=1\n"
    )
    cases = [
        (("evaluate", "--jobs", "5", "--seeds", "1", "--policies", "para_min", "--out", str(tmp_path / "afile")), "is a file", None),
        (("place", "alexnet", "--iterations", "0"), "greater than or equal to 1", None),
        (("import", "pipedream", str(tmp_path / "p.txt"), "--out", str(tmp_path / "missing" / "x.json")), "cannot write job graph", None),
        (("import", "torch", "facmod:nope", "--out", str(tmp_path / "x.json")), "no callable 'nope'", tmp_path),
        (("import", "torch", "facmod:bad", "--out", str(tmp_path / "x.json")), "facmod:bad() raised RuntimeError: boom", tmp_path),
        (("place", "alexnet", "--cluster", "dgx8x8", "--heuristic", "adaptive"), "adaptive is tuned on the generated streams", None),
        (("place", "alexnet", "--heuristic", "single-best"), "single-best is tuned on the generated streams", None),
        (("evaluate", "--trace", str(tmp_path / "afile"), "--load", "0.5,1.3"), "error: a replayed --trace has its own arrival", None),
    ]
    for args, message, cwd in cases:
        result = run(*args, cwd=cwd)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1


def test_identical_timelines_are_drawn_once_and_named_together():
    from placer.evaluate.plots import coinciding

    a = {"policy": "lean", "time_s": [0, 1], "busy": [0.5, 0.2]}
    b = {"policy": "para_min", "time_s": [0, 1], "busy": [0.5, 0.2]}
    c = {"policy": "para_max", "time_s": [0, 1], "busy": [1.0, 0.0]}
    assert [label for label, _ in coinciding([a, c, b])] == ["lean = para_min", "para_max"]


def test_report_redraws_the_plots(tmp_path):
    out = tmp_path / "eval"
    assert (
        run(
            "evaluate",
            "--graphs",
            "alexnet",
            "--beta-dist",
            "A",
            "--jobs",
            "20",
            "--seeds",
            "2",
            "--policies",
            "para_min,lean",
            "--out",
            str(out),
        ).returncode
        == 0
    )
    for png in out.glob("*.png"):
        png.unlink()
    result = run("report", str(out), "--plots")
    assert result.returncode == 0 and {p.name for p in out.glob("*.png")} == {
        "blocking_rate.png",
        "avoidable_blocking_rate.png",
        "throughput.png",
        "utilization.png",
        "blocking_over_time.png",
    }


def test_files_that_are_not_text_are_one_line(tmp_path):
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    pickled = tmp_path / "plain.pt"
    pickled.write_bytes(b"\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.")  # pickle.dumps({"a": 1})
    cases = [
        (("place", str(binary)), "job graph"),
        (("predict", str(binary), "--degree", "2"), "job graph"),
        (("evaluate", "--graphs", str(binary), "--out", str(tmp_path / "o")), "job graph"),
        (("evaluate", "--cluster", str(binary), "--out", str(tmp_path / "o")), "cluster spec"),
        (("evaluate", "--trace", str(binary), "--out", str(tmp_path / "o")), "trace"),
        (("import", "pipedream", str(binary), "--out", str(tmp_path / "x.json")), "PipeDream file"),
        (("place", "alexnet", "--state", str(binary)), "state"),
    ]
    for args, what in cases:
        result = run(*args)
        assert result.returncode == 2 and f"{what} '{binary}' is not UTF-8 text" in result.stderr, (args, result.stderr[-400:])
        assert len(result.stderr.strip().splitlines()) == 1
    result = run("place", "alexnet", "--policy-file", str(pickled))
    assert result.returncode == 2 and "not a placer policy file" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Warning" not in result.stderr


def test_report_names_what_is_missing(tmp_path):
    result = run("report", str(tmp_path / "nothing"))
    assert result.returncode == 2 and "does not exist" in result.stderr and "FileNotFoundError" not in result.stderr
    result = run("report", str(tmp_path))
    assert result.returncode == 2 and f"no results.json in '{tmp_path}'" in result.stderr


def test_report_formats_and_undefined_intervals(tmp_path):
    out = tmp_path / "e"
    args = ("evaluate", "--cluster", "pacml", "--graphs", "alexnet", "--jobs", "20", "--seeds", "1", "--beta-dist", "A")
    assert run(*args, "--policies", "para_max,lean:admit=0.9:free=0.3", "--out", str(out)).returncode == 0
    markdown = run("report", str(out)).stdout
    assert "| lean:admit=0.9:free=0.3 |" in markdown and "± n/a" in markdown
    rows = run("report", str(out), "--format", "csv").stdout.strip().splitlines()
    assert rows == ["policy,beta A blocking,beta A blocking ci95,beta A jobs/h,beta A jobs/h ci95", *rows[1:]] and len(rows) == 3
    assert rows[-1].startswith("lean:admit=0.9:free=0.3,0.") and rows[-1].count(",,") == 1
    table = subprocess.run(
        [*CLI, "report", str(out), "--format", "table"], capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "80"}
    )
    setting, _, rendered = table.stdout.partition("\n\n")
    assert "lean:admit=0.9:free=0.3" in rendered and max(len(line) for line in rendered.splitlines()) <= 80


@pytest.mark.parametrize("command", ["serve", "train", "evaluate", "calibrate", "ray-demo", "ray-cluster"])
def test_help_shows_no_bool_placeholder_beside_flags(command):
    from typer.testing import CliRunner

    from placer.cli import _register_plugins, app

    _register_plugins()
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--help" in result.output
    assert "<bool>" not in result.output


def test_the_cli_starts_on_a_typer_without_the_rich_type_column():
    """pyproject allows typer 0.12, whose TyperOption has no ``display_type_rich`` (typer 0.15.1 has none either): the
    patch that hides ``<bool>`` beside flags is skipped there, and ``placer`` starts (``--version``: typer 0.29's own help
    needs the method)."""
    code = """import sys, typer.core
for kind in typer.core.TyperOption.__mro__:
    if "display_type_rich" in vars(kind):
        delattr(kind, "display_type_rich")
from placer.cli import main
sys.argv = ["placer", "--version"]
main()"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("placer ")


def test_structured_streams_tuned_and_online_admission_and_the_gap_to_hindsight(tmp_path):
    out = tmp_path / "s"
    args = ["--graphs", "alexnet,resnet18", "--beta-dist", "B", "--jobs", "40", "--seeds", "2", "--cluster", "dgx8x8"]
    args += ["--structure", "daily+sweeps", "--policies", "lean:admit=0.9,lean:admit=auto,lean:admit=best,hindsight:h=4"]
    result = run("evaluate", *args, "--out", str(out))
    assert result.returncode == 0, result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    tuned = [r["policy_stats"] for r in runs if r["policy"] == "lean:admit=best"]
    assert len(tuned) == 2 and tuned[0] == tuned[1]  # tuned once per beta distribution, on streams of its own
    assert tuned[0]["admit"] == float(min(tuned[0]["tuning_blocking"].items(), key=lambda kv: (kv[1], -float(kv[0])))[0])
    rate = {(r["policy"], r["seed"]): r["blocking_rate"] for r in runs}
    report = run("report", str(out), "--against", "lean:admit=0.9")
    assert report.returncode == 0, report.stderr
    assert "structure daily+sweeps" in report.stdout
    gap_table = report.stdout.split("Gap to hindsight:h=4 closed")[1]
    room = sum(rate["lean:admit=0.9", s] - rate["hindsight:h=4", s] for s in (0, 1))
    saved = sum(rate["lean:admit=0.9", s] - rate["lean:admit=auto", s] for s in (0, 1))
    expected = f"{saved / room:+.0%}" if room > 0 else "n/a (no gap)"
    assert f"| lean:admit=auto | {expected} |" in gap_table
    assert "| lean:admit=best | admit=" in report.stdout.split("Threshold chosen on tuning streams")[1]
    bad = run("evaluate", *args[:-2], "--structure", "weekly", "--policies", "lean", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "bad structure 'weekly'" in bad.stderr


def test_several_loads_and_what_a_policy_can_change(tmp_path):
    out = tmp_path / "loads"
    args = ["--cluster", "dgx8x8", "--graphs", "alexnet,resnet18", "--beta-dist", "C", "--jobs", "20", "--seeds", "2"]
    result = run("evaluate", *args, "--queue", "edf-bf", "--load", "0.5,1.3", "--policies", "para_max,best", "--out", str(out))
    assert result.returncode == 0, result.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["load"] for r in runs] == [0.5] * 4 + [1.3] * 4
    for r in runs:  # every unavoidable job is blocked, so the rates add up
        assert r["avoidable_blocking_rate"] * (1 - r["unavoidable_share"]) == pytest.approx(r["blocking_rate"] - r["unavoidable_share"])
    assert {p.name for p in out.glob("load1.3_*.png")} >= {"load1.3_blocking_rate.png", "load1.3_avoidable_blocking_rate.png"}
    report = run("report", str(out), "--outcomes", "--against", "para_max")
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert "load 0.5:" in text and "load 1.3:" in text and "| avoidable blocking |" in text
    assert "Avoidable blocking rate minus para_max's" in text and "| best (load 1.3) |" in text


def test_hostile_files_are_one_line(tmp_path):
    from tests.placer.toys import chain

    backward = chain().to_dict()
    for node in backward["graph"]["nodes"]:
        node["pass"] = "backward"
    (tmp_path / "backward.json").write_text(json.dumps(backward))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "wide.csv").write_text("graph,devices,step_time_s\n" + "x" * 200_000 + ",a,1\n")
    cases = [
        (("place", str(tmp_path / "backward.json")), "has no forward ops"),
        (("report", str(tmp_path / "deep.json")), "not an evaluation results file"),
        (("calibrate", str(tmp_path / "wide.csv"), "--out", str(tmp_path / "c.toml")), "field larger than field limit"),
        (("calibrate", str(tmp_path / "wide.csv"), "--out", str(tmp_path / "no" / "c.toml")), "folder"),
        (("evaluate", "--trace", str(tmp_path / "wide.csv"), "--out", str(tmp_path / "ev")), "field larger than field limit"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr[-500:])


def test_an_error_naming_a_toml_section_keeps_its_brackets(tmp_path):
    pytest.importorskip("torch")
    config = tmp_path / "c.toml"
    config.write_text('[env]\nclusters = ["dgx8x8"]\nsettings = [{graphs = ["vgg16"]}]\n\n[env.workload]\ngraphs = ["alexnet"]\n')
    result = run("train", "--config", str(config), "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "graph 'vgg16' is not one of [env.workload] graphs" in " ".join(result.stderr.split())  # not read as markup
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_report_counts_the_holds_a_gate_placed_per_job():
    from pathlib import Path

    from tools.figures.core import results_dir

    path = Path(__file__).parents[3] / results_dir("guard-tuning") / "mixed-poisson.json"  # learned:default:below=L, evaluated
    report = run("report", str(path))
    assert report.returncode == 0, report.stderr
    runs = [r for r in json.loads(path.read_text())["runs"] if r["policy"] == "learned:default:below=1" and r["load"] == 0.5]
    cell = sum(r["policy_stats"]["overrides"] for r in runs if r["beta_dist"] == "A") / sum(
        r["jobs"] for r in runs if r["beta_dist"] == "A"
    )
    assert "Holds placed as adaptive would" in report.stdout
    assert f"| learned:default:below=1 (load 0.5) | {cell:.3f} |" in report.stdout


def test_the_cluster_file_reference_names_every_key():
    import re
    from pathlib import Path

    from pydantic import BaseModel

    from placer.cluster.topology import ClusterSpec

    text = (Path(__file__).resolve().parents[3] / "docs" / "clusters.md").read_text()

    def keys(model: type[BaseModel]) -> set[str]:
        found = set()
        for name, field in model.model_fields.items():
            found.add(name)
            for inner in getattr(field.annotation, "__args__", (field.annotation,)):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    found |= keys(inner)
        return found

    missing = sorted(k for k in keys(ClusterSpec) if not re.search(rf"[`\[.]{k}[`\].]", text))  # `k`, [k], a.k.b
    assert not missing, missing
