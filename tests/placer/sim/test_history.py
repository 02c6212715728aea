import math

import pytest

from placer.sim.history import ArrivalHistory, LoadMeter, identity
from placer.sim.types import Job
from tests.placer.toys import chain


def _job(job_id, t, beta=0.5, iterations=10, graph=None):
    return Job(job_id, graph or chain(), t, beta, iterations, 60.0)


def _history(times, **kw):
    history = ArrivalHistory()
    for i, t in enumerate(times):
        history.observe(_job(i, t, **kw))
    return history


def test_rates_against_the_long_run_by_hand():
    # 9 arrivals 10 s apart, then 4 arrivals 2 s apart: long-run gap (80 + 8) / 12 = 7.33 s
    times = [10.0 * i for i in range(9)] + [82.0, 84.0, 86.0, 88.0]
    history = _history(times)
    assert history.mean_gap_s() == pytest.approx(88 / 12)
    assert history.rate_ratio(4) == pytest.approx((88 / 12) * 4 / 8)  # last 4 gaps span 8 s
    assert history.rate_ratio(8) == pytest.approx((88 / 12) * 8 / (88 - 40))
    assert history.rate_ratio(100) == pytest.approx(1.0)  # the whole history is the long run


def test_trend_compares_the_last_window_with_the_one_before():
    times = [10.0 * i for i in range(5)] + [40 + 2.0 * i for i in range(1, 5)]  # 4 gaps of 10 s, then 4 of 2 s
    assert _history(times).trend(4) == pytest.approx(40 / 8)
    assert _history(times[:5]).trend(4) == 1.0  # not enough history


def test_recurrence_of_the_same_job():
    history = ArrivalHistory()
    history.observe(_job(0, 0.0, beta=0.3))
    history.observe(_job(1, 5.0, beta=0.7))
    history.observe(_job(2, 9.0, beta=0.3))
    assert history.recurrence() == {"count": 1, "since": 9.0, "recent": 1}
    history.observe(_job(3, 12.0, beta=0.9))
    assert history.recurrence() == {"count": 0, "since": math.inf, "recent": 0}
    history.observe(_job(3, 12.0, beta=0.9))  # offered again: counted once
    assert history.arrivals == 4


def test_identity_is_graph_length_and_deadline():
    assert identity(_job(0, 0.0)) == identity(_job(1, 5.0))
    assert identity(_job(0, 0.0)) != identity(_job(1, 5.0, iterations=11))
    assert identity(_job(0, 0.0)) != identity(_job(1, 5.0, beta=0.51))


def _seq_job(job_id, arrival_s, seq_s=64.0):
    return Job(job_id, chain(), arrival_s, 1.0, 1, seq_s)


def test_load_meter_counts_arrivals_by_id_and_each_job_once():
    meter = LoadMeter(window=4)
    assert meter.load(64) is None
    for k in (0, 2, 4):  # ids 1 and 3 left without an offer: still arrivals
        meter.observe(_seq_job(k, float(k)))
    assert meter.load(64) == pytest.approx(1.0)  # 1 arrival/s x 64 s / 64 devices
    meter.observe(_seq_job(4, 4.0))  # offered again from the queue: nothing changes
    meter.observe(_seq_job(3, 3.0, seq_s=256.0))  # offered late, after a newer job: in the mean, not the rate
    assert meter.seen == 4 and meter.load(64) == pytest.approx((64 * 3 + 256) / 4 / 64)
    meter.observe(_seq_job(10, 6.0))  # 6 arrivals in 2 s; the window keeps ids within 4 of the newest
    assert meter.load(64) == pytest.approx(6 / 2 * ((64 * 4 + 256) / 5) / 64)
