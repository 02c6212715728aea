import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.common.errors import WorkloadError
from placer.workloads.generator import BetaDistribution, SizeDistribution, Workload
from placer.workloads.structure import REPLAY_TRAIN_SHARE, Structure, replayed_gaps, sweep_sizes, trace_part_gaps
from tests.placer.toys import chain


def _workload(structure: str, jobs: int = 400, size: str = "loguniform:0.1:10") -> Workload:
    # one graph of 6 s per iteration, 10 iterations: mean job length 60 s x the size factor's mean
    return Workload([chain()], BetaDistribution("A"), 0.9, 8, jobs, "poisson", 10, None, SizeDistribution(size), Structure(structure))


def _offered_load(jobs, devices: int = 8) -> float:
    work = sum(spec.graph.sequential_iteration_s * spec.iterations for spec in jobs)
    return work / jobs[-1].arrival_s / devices


@pytest.mark.parametrize(
    "spec",
    [
        "nope",
        "daily:amp=1",
        "daily:period=0",
        "daily:amp=x",
        "sweeps:size=1",
        "sweeps:share=1",
        "recurring:templates=0",
        "recurring:jitter=0.5",
        "replay:gavel",
        "replay",
        "daily+daily",
        "daily+replay:philly",
        "replay:philly:part=test",
        "replay:philly:held",
        "replay:philly:part=held:part=train",
        "sweeps:foo=1",
    ],
)
def test_bad_structures_are_refused_with_a_message(spec):
    with pytest.raises(WorkloadError, match="bad structure"):
        Structure(spec)


def test_iid_joined_to_a_part_says_to_drop_it_not_that_it_is_unknown():
    with pytest.raises(WorkloadError, match=r"'daily\+iid': iid \(no structure\) joins no part; drop it"):
        Structure("daily+iid")


def test_defaults_come_from_the_philly_trace():
    parts = Structure("daily+sweeps+recurring").parts
    assert parts["daily"] == {"amp": 0.29, "period": 6.6}
    assert parts["sweeps"]["share"] == 0.69 and parts["sweeps"]["size"] == 5.1
    assert parts["recurring"] == {"share": 0.5, "templates": 8, "jitter": 0.1}


def test_iid_is_the_stream_it_always_was():
    # the independent stream draws gap, graph, beta, size per job in that order (unchanged by structures)
    a = list(_workload("iid").jobs(np.random.default_rng(3)))
    rng = np.random.default_rng(3)
    gap = _workload("iid").mean_gap_s
    first_gap = rng.exponential(gap)
    assert a[0].arrival_s == first_gap


def test_sweeps_mean_size_and_share():
    # half the jobs in sweeps of 4 on average: a fraction e of events are sweeps with 4e / (4e + 1 - e) = 0.5,
    # so e = 0.2 and an event brings 1 + 0.2 x 3 = 1.6 jobs
    structure = Structure("sweeps:share=0.5:size=4")
    assert structure.jobs_per_event() == pytest.approx(1.6)
    sizes = sweep_sizes(structure, 200_000, np.random.default_rng(0))
    assert sizes.min() == 1 and sizes[sizes > 1].min() == 2
    assert sizes[sizes > 1].mean() == pytest.approx(4, rel=0.01)
    assert sizes[sizes > 1].sum() / sizes.sum() == pytest.approx(0.5, rel=0.01)


def test_a_sweep_is_copies_of_one_job_within_its_window():
    jobs = list(_workload("sweeps:share=0.9:size=6:within=0.001", 300).jobs(np.random.default_rng(1)))
    window = 0.001 * _workload("sweeps").mean_job_length_s
    by_job = {}
    for spec in jobs:
        by_job.setdefault((spec.beta, spec.iterations), []).append(spec.arrival_s)
    bursts = [times for times in by_job.values() if len(times) > 1]
    assert len(bursts) > 20
    assert all(max(t) - min(t) <= window + 1e-9 for t in bursts)


def test_recurring_jobs_return_on_their_period():
    workload = _workload("recurring:share=0.5:templates=2:jitter=0", 600, size="const")
    jobs = list(workload.jobs(np.random.default_rng(5)))
    period = 2 * workload.mean_gap_s / 0.5
    counts = {}
    for spec in jobs:
        counts.setdefault(spec.beta, []).append(spec.arrival_s)
    recurring = sorted((times for times in counts.values() if len(times) > 5), key=len)[-2:]
    assert len(recurring) == 2
    for times in recurring:
        assert np.allclose(np.diff(times), period)


def test_replay_takes_the_philly_trace_gaps_scaled_to_the_load():
    a = list(_workload("replay:philly", 300).jobs(np.random.default_rng(2)))
    b = list(_workload("replay:philly", 300).jobs(np.random.default_rng(2)))
    assert [s.arrival_s for s in a] == [s.arrival_s for s in b]
    gaps = np.diff([s.arrival_s for s in a])
    assert (gaps == 0).mean() > 0.02  # the trace's tied arrivals survive: it is bursty, not Poisson
    assert a[-1].arrival_s == pytest.approx(300 * _workload("iid").mean_gap_s, rel=0.01)


def test_the_replayed_parts_split_the_trace_by_time_and_share_no_gap():
    whole, train, held = (trace_part_gaps("philly", part) for part in (None, "train", "held"))
    assert len(train) + len(held) == len(whole) - 1  # the one gap across the cut is in neither part
    assert np.array_equal(np.concatenate([train, whole[len(train) : len(train) + 1], held]), whole)
    assert train.sum() == pytest.approx(REPLAY_TRAIN_SHARE * whole.sum(), rel=0.001)
    assert Structure("replay:philly:part=held").replay_part == "held" and Structure("replay:philly").replay_part is None
    assert Structure("replay:philly:part=train+sweeps").replay == "philly"


def test_a_replayed_part_draws_its_windows_from_that_part_only():
    held = trace_part_gaps("philly", "held")
    start = int(np.random.default_rng(3).integers(len(held)))  # replayed_gaps' one draw
    window = held[(start + np.arange(50)) % len(held)]
    assert np.allclose(replayed_gaps("philly", 50, np.random.default_rng(3), part="held"), window / window.mean())
    stream = list(_workload("replay:philly:part=held", 50).jobs(np.random.default_rng(3)))
    assert np.allclose(np.diff([s.arrival_s for s in stream]), (window / window.mean() * _workload("iid").mean_gap_s)[1:50])


def test_a_trace_of_your_own_replays_its_arrival_times_split_by_time(tmp_path):
    path = tmp_path / "mine.csv"  # unsorted, as a log may be; the cut is at 2/3 of the 0-150 s span: 100 s
    path.write_text("arrival_s,graph,beta,iterations\n0,alexnet,2,10\n30,alexnet,2,10\n10,gnmt,2,10\n60,a,2,1\n100,a,2,1\n150,a,2,1\n")
    assert trace_part_gaps(str(path)).tolist() == [10, 20, 30, 40, 50]
    assert trace_part_gaps(str(path), "train").tolist() == [10, 20, 30] and trace_part_gaps(str(path), "held").tolist() == [50]
    assert Structure(f"replay:{path}:part=held").replay == str(path) and Structure(f"replay:{path}").replay_part is None
    stream = list(_workload(f"replay:{path}:part=train", 4).jobs(np.random.default_rng(3)))  # a window wraps within its part
    gaps = np.diff([s.arrival_s for s in stream])
    assert np.allclose(gaps / gaps[0], [1, 2, 3])  # this seed's window: the gaps 30 | 10 20 30, wrapped within 0-60 s


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("when,graph\n1,a\n2,a\n3,a\n", "not a replay CSV (no arrival_s column"),
        ("arrival_s\n0\nsoon\n5\n", "mine.csv:3: arrival_s 'soon' is not a number"),
        ("arrival_s\n0\ninf\n5\n", "is not finite"),
        ("arrival_s\n4\n4\n4\n", "too few arrivals to replay"),
    ],
)
def test_a_bad_trace_of_your_own_is_one_line_when_the_spec_is_read(tmp_path, text, message):
    path = tmp_path / "mine.csv"
    path.write_text(text)
    with pytest.raises(WorkloadError, match=re.escape(message)):
        Structure(f"replay:{path}:part=train")


def test_a_replay_of_anything_else_names_what_it_replays(tmp_path):
    with pytest.raises(WorkloadError, match="replay:FILE.csv"):
        Structure(f"replay:{tmp_path / 'mine.txt'}")
    with pytest.raises(WorkloadError, match="cannot read trace"):
        Structure(f"replay:{tmp_path / 'none.csv'}")


def test_the_daily_cycle_modulates_the_rate():
    workload = _workload("daily:amp=0.8:period=20", 6000, size="const")
    jobs = list(workload.jobs(np.random.default_rng(4)))
    period = 20 * workload.mean_job_length_s
    times = np.array([s.arrival_s for s in jobs])
    phase_bins = np.bincount(((times % period) / period * 8).astype(int), minlength=8)
    assert phase_bins.max() / phase_bins.min() > 3  # 1.8 / 0.2 at the extremes, averaged over an eighth


@settings(max_examples=25, deadline=None)
@given(
    spec=st.sampled_from(["iid", "daily", "sweeps", "recurring", "replay:philly", "daily+sweeps+recurring", "replay:philly+sweeps"]),
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 120),
)
def test_every_structure_gives_the_jobs_asked_for_in_time_order(spec, seed, jobs):
    stream = list(_workload(spec, jobs).jobs(np.random.default_rng(seed)))
    assert len(stream) == jobs
    times = [s.arrival_s for s in stream]
    assert times == sorted(times) and times[0] >= 0 and all(math.isfinite(t) for t in times)
    assert all(0 < s.beta <= 1 and s.iterations >= 1 for s in stream)


@pytest.mark.parametrize("spec", ["daily", "sweeps", "recurring", "replay:philly"])
def test_structure_keeps_the_offered_load_on_average(spec):
    loads = [_offered_load(list(_workload(spec, 400).jobs(np.random.default_rng(seed)))) for seed in range(40)]
    assert np.median(loads) == pytest.approx(0.9, rel=0.12)
