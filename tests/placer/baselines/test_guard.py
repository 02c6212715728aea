"""The load gate on a policy's holds: exact decisions on hand-built offers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from placer.baselines.guard import Guarded
from placer.baselines.policy import Policy
from placer.sim.types import Place, Reject


class Always(Policy):
    """Decides ``decision`` on every offer; counts resets and tunings."""

    def __init__(self, decision) -> None:
        self.decision, self.resets, self.tunings = decision, 0, []

    def reset(self, rng) -> None:
        self.resets += 1

    def decide(self, job, view):
        return self.decision

    def tuned(self, tuning):
        self.tunings.append(tuning)
        return self


def job(job_id: int, arrival_s: float, sequential_jct_s: float = 20.0):
    return SimpleNamespace(job_id=job_id, arrival_s=arrival_s, sequential_jct_s=sequential_jct_s)


VIEW = SimpleNamespace(cluster=SimpleNamespace(num_devices=4))
PLACED = Place((0, 1))


def test_without_a_gate_every_hold_that_the_other_places_is_placed_as_it_places():
    guarded = Guarded(Always(Reject()), Always(PLACED))
    guarded.reset(np.random.default_rng(0))
    assert [guarded.decide(job(k, 10.0 * k), VIEW) for k in range(3)] == [PLACED] * 3
    assert guarded.stats() == {"overrides": 3, "below": math.inf, "last": None, "waiting": None, "policy": None, "by": None}


def test_placements_and_holds_the_other_also_holds_are_kept():
    own = Place((3,))
    assert Guarded(Always(own), Always(PLACED)).decide(job(0, 0.0), VIEW) == own
    both_hold = Guarded(Always(Reject()), Always(Reject()))
    assert both_hold.decide(job(0, 0.0), VIEW) == Reject()
    assert both_hold.overrides == 0


@pytest.mark.parametrize(("below", "second"), [(0.6, PLACED), (0.5, Reject()), (0.4, Reject())])
def test_the_gate_reads_the_measured_load(below, second):
    # two arrivals 10 s apart, 20 s of sequential work each, 4 devices: (1 / 10 s) x 20 s / 4 = load 0.5
    guarded = Guarded(Always(Reject()), Always(PLACED), below)
    guarded.reset(np.random.default_rng(0))
    assert guarded.decide(job(0, 0.0), VIEW) == PLACED  # no load measured yet: it counts as low
    assert guarded.decide(job(1, 10.0), VIEW) == second
    assert guarded.overrides == 1 + (second == PLACED)


def test_reset_and_tuning_reach_both_policies():
    policy, by = Always(Reject()), Always(PLACED)
    guarded = Guarded(policy, by, 1.0)
    guarded.reset(np.random.default_rng(0))
    assert (policy.resets, by.resets) == (1, 1)
    tuning = object()
    assert guarded.tuned(tuning) is guarded  # neither changed: the same policy
    assert policy.tunings == [tuning] and by.tunings == [tuning]


def test_a_tuned_other_makes_a_tuned_copy():
    class Tunable(Always):
        def tuned(self, tuning):
            return Always(Place((2,)))

    guarded = Guarded(Always(Reject()), Tunable(PLACED), 1.0)
    tuned = guarded.tuned(object())
    assert tuned is not guarded and tuned.below == 1.0 and tuned.policy is guarded.policy
    assert tuned.decide(job(0, 0.0), VIEW) == Place((2,))


def test_the_queue_is_the_guarded_policys_unless_the_name_says():
    from placer.baselines.registry import make_heuristic
    from placer.baselines.specs import PolicySpec
    from placer.sim.queueing import QueueConfig

    fifo = QueueConfig.parse("fifo")
    assert Guarded(make_heuristic("lean@edf"), Always(PLACED)).queue(fifo).discipline == "edf"
    assert Guarded(make_heuristic("lean@edf"), Always(PLACED), spec=PolicySpec.parse("lean@sjf")).queue(fifo).discipline == "sjf"


def test_a_placement_session_refuses_a_gate_and_names_what_to_use_instead():
    from placer.api.session import Placer
    from placer.common.errors import PolicyError
    from placer.cost import CostModel
    from tests.placer.toys import toy_cluster

    with pytest.raises(PolicyError, match="cannot answer placement queries: use learned or learned:NAME"):
        Placer(CostModel(toy_cluster(1, 2)), Guarded(Always(Reject()), Always(PLACED), 1.0))


@pytest.mark.parametrize(("remaining_s", "placed"), [(15.0, True), (19.9, True), (20.0, False), (25.0, False)])
def test_with_last_only_a_hold_near_its_deadline_is_placed(remaining_s, placed):
    # the other's placement takes 10 s; last=2: a hold is replaced only with less than 2 x 10 s left
    offered = SimpleNamespace(job_id=0, arrival_s=0.0, sequential_jct_s=20.0, graph="g", iterations=1, remaining_s=lambda now: remaining_s)
    view = SimpleNamespace(
        cluster=SimpleNamespace(num_devices=4), now=0.0, cost=SimpleNamespace(jct_s=lambda graph, devices, iterations: 10.0)
    )
    guarded = Guarded(Always(Reject()), Always(PLACED), last=2.0)
    guarded.reset(np.random.default_rng(0))
    assert guarded.decide(offered, view) == (PLACED if placed else Reject())


@pytest.mark.parametrize(("waiting", "placed"), [(1, False), (2, False), (3, True), (4, True)])
def test_with_waiting_only_a_hold_in_a_short_queue_is_placed(waiting, placed):
    # three jobs wait, the offered one included: the gate at W places the hold when 3 <= W
    view = SimpleNamespace(cluster=SimpleNamespace(num_devices=4), waiting=(job(0, 0.0), job(1, 1.0), job(2, 2.0)))
    guarded = Guarded(Always(Reject()), Always(PLACED), waiting=waiting)
    guarded.reset(np.random.default_rng(0))
    assert guarded.decide(job(2, 2.0), view) == (PLACED if placed else Reject())
    assert guarded.overrides == int(placed)
