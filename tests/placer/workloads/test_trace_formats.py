"""Each public trace format on a hand-written excerpt in its published layout: what is kept, dropped and why, the
graphs and iterations the shared mapping gives, and arrivals that keep the time of day."""

from pathlib import Path

import pytest

from placer.common.errors import WorkloadError
from placer.workloads.generator import BetaDistribution
from placer.workloads.traces import DeadlineRule, GraphMapping, import_trace, pai
from placer.workloads.traces.mapping import speed_ratio
from tests.placer.toys import op, toy_graph

FIXTURES = Path(__file__).parent / "fixtures"
SEQ = {"small": 10.0, "big": 100.0}  # s per iteration; any other graph (a named one) 50 s
HOUR, DAY = 3600.0, 86400.0


def graph(name: str):
    return toy_graph({"a": op(1.0)}, {}, name=name)


def mapping(**options) -> GraphMapping:
    """Two buckets (small: 10 s/iteration, big: 100 s); named graphs load as toys of 50 s/iteration."""
    return GraphMapping((graph("big"), graph("small")), lambda g: SEQ.get(g.name, 50.0), resolve=graph, **options)


def run(kind: str, name: str, **options):
    rows, report = import_trace(kind, FIXTURES / name, mapping(), DeadlineRule(BetaDistribution("const:0.5")), **options)
    return [(r.arrival_s, r.graph, r.iterations) for r in rows], report


def test_helios_keeps_finished_gpu_jobs_and_their_time_of_day():
    rows, report = run("helios", "helios_cluster_log.csv")
    assert (report.rows, report.kept) == (11, 6)
    assert report.dropped == {"failed": 2, "unparsable": 1, "cpu-only": 1, "no run time": 1}  # FAILED + TIMEOUT; 1010's time
    # GPU-seconds 3600, 57600, 7200 (CANCELLED: kept), 60, 576000, 120: the median, 5400, splits small from big
    assert rows == [
        (8 * HOUR, "small", 360),  # 08:00 of the first day: arrival 0 is that midnight
        (9.5 * HOUR, "big", 576),
        (11 * HOUR, "big", 72),
        (DAY - 1, "small", 6),  # 23:59:59
        (DAY + 2 * HOUR, "big", 5760),
        (DAY + 6.5 * HOUR, "small", 12),
    ]
    assert report.mapped == {("small", "by GPU time"): 3, ("big", "by GPU time"): 3}
    assert report.origin_s == 18353 * DAY  # 2020-04-01 00:00


def test_helios_by_virtual_cluster_and_from_a_start():
    rows, report = run("helios", "helios_cluster_log.csv", vc="vcEhP")
    assert [r[0] for r in rows] == [11 * HOUR, DAY + 2 * HOUR, DAY + 6.5 * HOUR]
    assert report.dropped == {"other vc": 6, "unparsable": 1, "cpu-only": 1}
    rows, report = run("helios", "helios_cluster_log.csv", start="2020-04-02")
    assert [r[0] for r in rows] == [2 * HOUR, 6.5 * HOUR]  # arrival 0 is the start
    assert report.dropped["before --start"] == 4
    rows, report = run("helios", "helios_cluster_log.csv", jobs=2)
    assert [r[0] for r in rows] == [8 * HOUR, 9.5 * HOUR] and report.dropped["after --jobs"] == 4


def test_acme_reads_the_lab_clock_and_maps_llm_job_types_by_name():
    rows, report = run("acme", "acme_trace_seren.csv")
    assert (report.rows, report.kept) == (7, 4)
    assert report.dropped == {"failed": 2, "cpu-only": 1}  # FAILED, NODE_FAIL; the 0-GPU Debug job
    assert rows == [
        (23 * 60 + 58, "big", 215),  # 00:23:58; 21544 GPU-s / 100 s
        (9 * HOUR, "llama_850m", 23040),  # Pretrain: 1152000 GPU-s / 50 s
        (10 * HOUR, "small", 30),  # a cancelled Evaluation job, 300 GPU-s
        (22 * HOUR, "gpt2_medium", 2304),  # SFT
    ]
    rows, report = run("acme", "acme_trace_kalos.csv")  # Kalos writes UTC: 11:28:42Z is 19:28:42 in Shanghai
    assert rows == [(19 * HOUR + 28 * 60 + 42, "big", 52), (DAY + 1.5 * HOUR, "small", 480)]
    assert report.dropped == {"failed": 1}


def test_acme_without_names_buckets_every_job():
    rows, _ = import_trace("acme", FIXTURES / "acme_trace_seren.csv", mapping(by_name=False), DeadlineRule())
    assert {r.graph for r in rows} == {"small", "big"}


def test_pai_joins_jobs_tasks_instances_and_workload_tags():
    rows, report = run("pai", "pai")
    assert (report.rows, report.kept) == (8, 3)
    assert report.dropped == {"unparsable": 1, "failed": 1, "cpu-only": 1, "unfinished": 1, "no task rows": 1}
    # job 1: 2 x 50 % of a V100, 3550 s from its first instance start to its last instance end (the task table says 3600)
    # job 2: 4 P100 (its ps task asks for none) for 7200 s, tagged bert; job 7: 25 % of a T4 for 400 s
    assert rows == [(9 * HOUR, "big", 36), (10 * HOUR, "bert_base", 576), (12.5 * HOUR, "small", 10)]
    same, _ = run("pai", "pai/pai_job_table.csv")  # the job table names its folder
    assert same == rows


def test_pai_start_in_the_tables_seconds_and_gpu_types():
    rows, _ = run("pai", "pai", start="180000")  # a number is a value of the time column (UTC+8 applied)
    assert [r[0] for r in rows] == [0.0, 9000.0]
    parsed = pai.parse(FIXTURES / "pai")
    assert [(j.gpus, j.gpu_type, j.name) for j in parsed.jobs if j.status == "completed" and j.gpus] == [
        (1.0, "V100", None),
        (4.0, "P100", "bert"),
        (0.25, "T4", None),
    ]


def test_pai_an_unreadable_task_row_changes_nothing(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "pai", tmp_path / "pai")
    with (tmp_path / "pai" / "pai_task_table.csv").open("a") as table:
        table.write("a25e80d6f41b379ec506182d,worker,1.0,Terminated,not a time,187900.0,600.0,20.0,100.0,V100\n")  # its only row
        table.write("b36f91e7052c48afd6172939,worker,2.0,Terminated,189000.0,x,600.0,20.0,100.0,V100\n")  # beside a good one
    parsed = pai.parse(tmp_path / "pai")
    assert parsed.dropped["unparsable task row"] == 2 and parsed.dropped["no task rows"] == 1  # no entry of 0 GPUs kept
    kept = {j.submit_s: (j.gpus, j.gpu_type) for j in parsed.jobs}
    assert kept[189000.0 + pai.UTC8_S] == (0.25, "T4")  # the bad row's 2 V100s not added


def test_pai_needs_its_task_table_and_tables_of_its_width(tmp_path):
    (tmp_path / "pai_job_table.csv").write_text((FIXTURES / "openb_pod_list.csv").read_text())
    with pytest.raises(WorkloadError, match="needs pai_task_table.csv"):
        run("pai", str(tmp_path))
    (tmp_path / "pai_task_table.csv").write_text((FIXTURES / "pai" / "pai_task_table.csv").read_text())
    with pytest.raises(WorkloadError, match="expected 6 columns job_name,inst_id,user,status,start_time,end_time, got 11"):
        run("pai", str(tmp_path))


def test_openb_shares_gpus_by_the_thousandth():
    rows, report = run("openb", "openb_pod_list.csv")
    assert (report.rows, report.kept) == (9, 4)
    assert report.dropped == {"unparsable": 1, "unknown phase": 1, "failed": 1, "unfinished": 1, "cpu-only": 1}
    # GPU-seconds 8 x 3600, 0.46 x 1000 (a Running pod, deleted), 0.22 x 590 (scheduled at 5010), 2 x 3600
    assert rows == [(3600.0, "big", 288), (4000.0, "small", 46), (5000.0, "small", 13), (90000.0, "big", 72)]


def test_a_named_gpu_type_moves_work_to_the_clusters_device():
    assert speed_ratio("V100M16", "A100-80GB") == pytest.approx(125e12 * 0.35 / (312e12 * 0.2987))
    assert speed_ratio("MISC", "A100-80GB") == pytest.approx(4.37e12 * 0.35 / (312e12 * 0.2987))  # a K80, fp32
    assert speed_ratio("G2", "A100-80GB") == speed_ratio("T4", None) == 1.0  # undisclosed type, or no reference
    rows, _ = import_trace("openb", FIXTURES / "openb_pod_list.csv", mapping(reference_device="V100-16GB"), DeadlineRule())
    assert rows[2].iterations == 13  # the pod that may run on a V100 16 GB: ratio 1 on a V100 cluster
    assert rows[3].iterations == round(7200 * 65 / 125 / 100)  # a T4 runs 65 / 125 of a V100's 16-bit rate


def test_pollux_applications_run_their_models_for_their_band_of_gpu_time():
    rows, report = run("pollux", "pollux_workload.csv")
    assert report.dropped == {"unknown application": 1}
    # GPU time: sqrt(60 s x 1 h) = 464.8 s for cifar10 and ncf, sqrt(1 h x 10 h) for deepspeech2 and bert, ...; 50 s/it
    assert rows == [
        (107.0, "gavel_resnet18", 9),
        (110.0, "gnmt", 228),
        (135.0, "gavel_recommendation", 9),
        (1604.0, "resnet50", 22768),
        (5813.0, "bert_base", 228),
        (6357.0, "resnet101", 2277),
    ]


def test_philly_log_sums_attempts_and_counts_the_last_ones_gpus():
    rows, report = run("philly-log", "philly_cluster_job_log.json")
    assert (report.rows, report.kept) == (7, 3)
    assert report.dropped == {"unparsable": 1, "failed": 1, "no run time": 1, "unfinished": 1}
    # 8 GPUs x (74 s + 7200 s); a killed job, 2 GPUs x 1 h; 4 + 4 GPUs on two machines x 1 h: the median 28800 splits
    assert rows == [(1 * HOUR + 11 * 60 + 39, "big", 582), (4 * HOUR + 59 * 60, "small", 720), (DAY + 0.5 * HOUR, "big", 288)]
    rows, _ = run("philly-log", "philly_cluster_job_log.json", vc="11cb48")
    assert [r[0] for r in rows] == [4 * HOUR + 59 * 60]


@pytest.mark.parametrize(
    ("kind", "name", "match"),
    [
        ("acme", "helios_cluster_log.csv", r"not in the acme layout: expected columns job_id,user,node_num.*missing type"),
        ("helios", "openb_pod_list.csv", r"expected columns job_id,user,vc,gpu_num.*missing vc, gpu_num, state"),
        ("pollux", "acme_trace_seren.csv", r"missing time, application, num_replicas"),
        ("philly-log", "helios_cluster_log.csv", r"not a Philly job log \(JSON\)"),
        ("openb", "absent.csv", r"cannot read openb trace"),
    ],
)
def test_a_file_of_another_format_is_one_error_naming_the_expected_columns(kind, name, match):
    with pytest.raises(WorkloadError, match=match):
        run(kind, name)


def test_options_that_do_not_apply_are_refused():
    with pytest.raises(WorkloadError, match="--vc: openb traces name no virtual clusters"):
        run("openb", "openb_pod_list.csv", vc="x")
    with pytest.raises(WorkloadError, match="bad --start"):
        run("helios", "helios_cluster_log.csv", start="yesterday")
    with pytest.raises(WorkloadError, match=r"no jobs kept from the helios trace \(10 other vc, 1 unparsable\)"):
        run("helios", "helios_cluster_log.csv", vc="nobody")
    with pytest.raises(WorkloadError, match="unknown trace kind 'slurm'"):
        run("slurm", "helios_cluster_log.csv")


@pytest.mark.parametrize(
    ("gpus", "duration"),
    [("inf", "3600"), ("1", "inf"), ("1", "1e300"), ("-4", "3600"), ("2", "-3600"), ("1e7", "60")],
)
def test_a_row_whose_gpus_or_run_time_no_cluster_could_have_is_unparsable(gpus, duration, tmp_path):
    header, good = (FIXTURES / "helios_cluster_log.csv").read_text().splitlines()[:2]
    bad = good.split(",")
    bad[3], bad[10] = gpus, duration
    (tmp_path / "log.csv").write_text("\n".join([header, good, ",".join(bad)]) + "\n")
    rows, report = import_trace("helios", tmp_path / "log.csv", mapping(), DeadlineRule(BetaDistribution("const:0.5")))
    assert (report.rows, report.kept, report.dropped) == (2, 1, {"unparsable": 1})
    assert [r.arrival_s for r in rows] == [8 * HOUR]  # the good row alone


@pytest.mark.parametrize("start", ["nan", "inf", "-inf"])
def test_a_start_that_is_no_finite_time_is_one_error(start):
    with pytest.raises(WorkloadError, match=f"bad --start '{start}': use an ISO date or time"):
        run("pollux", "pollux_workload.csv", start=start)
