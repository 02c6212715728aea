"""Observation features by hand: sizes relative to the jobs seen, option rows, graphs by id."""

import math

import numpy as np
import pytest

from placer.common.errors import PlacerError
from placer.cost import CostModel
from placer.envs.action import action_mask
from placer.envs.config import EnvConfig
from placer.envs.env import ClusterPlacementEnv
from placer.envs.observation import GraphRef, GraphTable, JobHistory, Offer, observe
from placer.sim.options import OptionTable, options
from placer.sim.state import ClusterView
from placer.sim.types import Job
from tests.placer.toys import chain, equal_sum_paths, toy_cluster

SMALL = EnvConfig(max_degree=2, max_groups=4)


def job(job_id: int, seconds: float, graph=None) -> Job:
    graph = graph or chain()
    return Job(job_id, graph, 0.0, 0.5, 1, seconds)


def test_size_history_is_relative_to_the_jobs_seen_each_counted_once():
    history = JobHistory()
    assert history.relative(10.0) == (1.0, 0.5)  # nothing seen yet: a typical job
    for i, seconds in enumerate((4.0, 1.0, 16.0)):
        history.observe(job(i, seconds))
    history.observe(job(0, 4.0))  # offered again (a queue): not counted twice
    # seen 1, 4, 16: median 4; 8 s is twice the median and longer than 2 of 3
    assert history.relative(8.0) == (2.0, 2 / 3)
    assert history.relative(1.0) == (0.25, 0.0)


def test_job_features_read_the_same_for_a_workload_scaled_1000_fold():
    cost = CostModel(toy_cluster(servers=2, per_server=2))
    view = ClusterView(cost, 0.0, np.ones(4, dtype=bool), np.zeros(4), 0)
    rows = []
    for scale in (1.0, 1000.0):
        history = JobHistory()
        jobs = [job(i, seconds * scale) for i, seconds in enumerate((3.0, 1.0, 2.0))]
        for j in jobs:  # the offered job too: whoever offers it records it
            history.observe(j)
        table = tuple(options(jobs[2], view, degrees=range(1, 3)))
        rows.append(observe(Offer(jobs[2], view, table), history, SMALL, GraphRef(0, 5))["job"])
    # seen 1, 2, 3 (the offered job counts): median 2, so the job is 1x the median; 1 of 3 is shorter
    assert rows[0][1] == pytest.approx(0.0) and rows[0][5] == pytest.approx(1 / 3)
    assert rows[0][3] == pytest.approx(math.log10(6) / 4)  # log10(1 + forward ops) / 4
    assert np.array_equal(rows[0][[0, 1, 5]], rows[1][[0, 1, 5]])


def test_option_rows_name_the_rule_and_count_the_whole_servers_left():
    cost = CostModel(toy_cluster(servers=2, per_server=2))
    view = ClusterView(cost, 0.0, np.ones(4, dtype=bool), np.zeros(4), 0)
    offered = job(0, 100.0)
    table = tuple(options(offered, view, degrees=(2,), rules=("best_fit", "spread")))
    assert [o.devices for o in table] == [(0, 1), (0, 2)]
    rows = observe(Offer(offered, view, table), JobHistory(), SMALL, GraphRef(0, 2))["options"]
    # best_fit packs server 0 (one whole server left of 2); spread breaks both (none left)
    assert rows[0, 9:].tolist() == [0.0, 1.0, 0.0, 0.5] and rows[1, 9:].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert rows[0, 3] == 0.5 and rows[1, 3] == 1.0  # servers spanned / degree


def test_observe_is_pure_and_names_the_graph_by_id():
    cost = CostModel(toy_cluster(servers=2, per_server=2))
    view = ClusterView(cost, 0.0, np.ones(4, dtype=bool), np.zeros(4), 0)
    history = JobHistory()
    offered = job(0, 100.0)
    history.observe(offered)
    offer = Offer(offered, view, tuple(options(offered, view, degrees=range(1, 3))))
    config = EnvConfig(max_degree=2, max_groups=4, history=True)
    first = observe(offer, history, config, GraphRef(3, 2))
    again = observe(offer, history, config, GraphRef(3, 2))
    assert first.keys() == again.keys() == {"graph", "job", "options", "groups", "group_mask", "cluster", "history"}
    assert all(np.array_equal(first[k], again[k]) for k in first)  # nothing was written between the calls
    assert history.relative(100.0) == (1.0, 0.0) and history.arrivals.arrivals == 1
    assert first["graph"].tolist() == [3] and first["graph"].dtype == np.int64
    metered = observe(offer, history, config.with_changes(meter=True), GraphRef(3, 2))  # the meter only when asked
    assert metered.keys() - first.keys() == {"meter"} and metered["meter"].shape == (3,)


def test_graphs_with_equal_array_sums_get_their_own_ids():
    table = GraphTable(equal_sum_paths(), max_nodes=8, max_edges=8)
    arrays = table.arrays
    for key in arrays:
        assert arrays[key][0].sum() == pytest.approx(arrays[key][1].sum())
    weights = np.arange(1, arrays["nodes"].shape[1] + 1)
    assert (arrays["nodes"][0].sum(1) * weights).sum() == pytest.approx((arrays["nodes"][1].sum(1) * weights).sum())
    assert not np.array_equal(arrays["edge_index"][0], arrays["edge_index"][1])
    assert [table.ref(g).id for g in table.graphs] == [0, 1]
    with pytest.raises(PlacerError, match="not in the observation's graph table"):
        table.ref(chain())


def test_meter_reads_the_offered_load_from_the_arrivals_seen():
    from placer.envs.observation import meter_features

    history = JobHistory()
    assert meter_features(history.meters, 64).tolist() == [0.0, 0.0, 0.0]  # nothing read yet: as for load 1, no trust
    for i in range(4):  # one arrival a second, each 64 s of sequential work, on 64 devices: load 1
        history.observe(Job(i, chain(), float(i), 0.5, 1, 64.0))
    assert meter_features(history.meters, 64).tolist() == pytest.approx([0.0, 0.0, 4 / 96])
    assert meter_features(history.meters, 16).tolist() == pytest.approx([1.0, 1.0, 4 / 96])  # load 4: log2(4) / 2
    assert meter_features(history.meters, 4096).tolist() == pytest.approx([-1.0, -1.0, 4 / 96])  # load 1/64: clipped


@pytest.mark.parametrize(
    "config",
    [
        EnvConfig(clusters=("pacml", "dgx8x8"), queue=("none", "edf-bf"), size=("const", "loguniform:0.1:10"), load=0.9, jobs=96),
        EnvConfig(clusters=("mixed",), advisers=("lean+best_fit",), max_degree=64, max_groups=3, strategy="sipml", jobs=64),
    ],
)
def test_the_env_s_option_table_reads_as_its_options_do(config):
    """The env's offers hold an OptionTable, whose mask and rows come from the cost model's table: the same bytes as an
    offer holding the options themselves (the one-option-at-a-time path LearnedPolicy's callers may take)."""
    env = ClusterPlacementEnv(config)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(300):
        offer = env.offer
        assert isinstance(offer.options, OptionTable)
        plain = Offer(offer.job, offer.view, tuple(offer.options))
        ref = env.graph_table.ref(offer.job.graph)
        fast, slow = observe(offer, env.history, env.config, ref, env.advice), observe(plain, env.history, env.config, ref, env.advice)
        assert fast.keys() == slow.keys()
        for key in fast:
            assert fast[key].dtype == slow[key].dtype and fast[key].tobytes() == slow[key].tobytes(), key
        mask = action_mask(offer.options, config.max_degree, len(config.rules))
        assert mask.tobytes() == action_mask(plain.options, config.max_degree, len(config.rules)).tobytes()
        _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if done:
            env.reset()
