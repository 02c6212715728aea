import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.cluster.devices import device_model
from placer.cluster.placement import PLACEMENT_RULES, FreeDevices, best_fit, first_fit, idle_placements, rule_indices, spread
from placer.cluster.topology import load_cluster, preset_names
from placer.common.errors import ClusterError, ClusterSpecError
from tests.placer.toys import toy_cluster


def test_presets_load_with_expected_sizes():
    assert {"pacml", "dgx8x8", "mixed"} <= set(preset_names())
    pacml, dgx, mixed = load_cluster("pacml"), load_cluster("dgx8x8"), load_cluster("mixed")
    assert (pacml.num_servers, pacml.num_devices) == (32, 32)
    assert (dgx.num_servers, dgx.num_devices, dgx.max_devices_per_server) == (8, 64, 8)
    assert mixed.num_devices == 48 and set(mixed.device_type) == {"A100-80GB", "V100-16GB"}
    assert dgx.device_name(9) == "s1-g1" and dgx.device_index["s1-g1"] == 9


def test_bad_specs_get_specific_errors(tmp_path):
    with pytest.raises(ClusterSpecError, match="unknown cluster preset 'nope'"):
        load_cluster("nope")
    bad = tmp_path / "c.toml"
    bad.write_text('name = "x"\n[device_types.g]\nmemory_bytes = -1\nspeed = 1\n')
    with pytest.raises(ClusterSpecError, match="device_types.g.memory_bytes: Input should be greater than 0"):
        load_cluster(bad)
    bad.write_text("name = [")
    with pytest.raises(ClusterSpecError, match="invalid TOML"):
        load_cluster(bad)
    with pytest.raises(ClusterError, match="unknown device type 'TPU'"):  # the datasheets': a ClusterError, as a spec's
        device_model("TPU")
    with pytest.raises(ClusterError, match="unknown precision 'fp4'"):
        device_model("A100-80GB").effective_precision("fp4")
    text = load_cluster("pacml").spec.model_dump_json()
    assert "A100" in text


def test_unknown_device_type_is_named(tmp_path):
    spec = tmp_path / "c.toml"
    spec.write_text(
        'name = "x"\n[device_types.g]\nmemory_bytes = 1e9\nspeed = 1\n[[servers]]\ncount = 1\ndevices_per_server = 1\n'
        'device_type = "h"\n[links.intra_server]\nbandwidth_Bps = 1e9\nlatency_s = 0\n'
        "[links.inter_server]\nbandwidth_Bps = 1e9\nlatency_s = 0\n"
    )
    with pytest.raises(ClusterSpecError, match="unknown device_type 'h'"):
        load_cluster(spec)


def test_placement_rules_on_a_hand_built_occupancy():
    cluster = toy_cluster(3, 4)  # devices 0-3 | 4-7 | 8-11
    free = np.ones(12, dtype=bool)
    free[[0, 1, 4]] = False  # free: server0 {2,3}, server1 {5,6,7}, server2 {8..11}
    assert first_fit(cluster, free, 3) == (2, 3, 5)
    assert best_fit(cluster, free, 3) == (5, 6, 7)  # tightest server that holds 3
    assert best_fit(cluster, free, 2) == (2, 3)
    assert best_fit(cluster, free, 6) == (5, 6, 8, 9, 10, 11)  # fewest servers: largest first
    assert spread(cluster, free, 4) == (2, 3, 5, 8)  # one per server per round
    assert first_fit(cluster, free, 10) is None and best_fit(cluster, free, 10) is None


@st.composite
def occupancies(draw):
    """(cluster preset, free mask, degree)."""
    cluster = load_cluster(draw(st.sampled_from(["pacml", "dgx8x8", "mixed"])))
    free = np.array(draw(st.lists(st.booleans(), min_size=cluster.num_devices, max_size=cluster.num_devices)))
    return cluster, free, draw(st.integers(1, 16))


@settings(max_examples=200, deadline=None)
@given(case=occupancies())
def test_placement_rules_return_distinct_free_devices_and_best_fit_spans_fewest_servers(case):
    cluster, free, degree = case
    for rule in (first_fit, best_fit, spread):
        devices = rule(cluster, free, degree)
        if free.sum() < degree:
            assert devices is None
            continue
        assert len(set(devices)) == degree and all(free[d] for d in devices) and list(devices) == sorted(devices)
    if free.sum() >= degree:
        counts = sorted(np.bincount(cluster.server_of[free], minlength=cluster.num_servers), reverse=True)
        fewest = next(k for k in range(1, len(counts) + 1) if sum(counts[:k]) >= degree)
        assert len(set(cluster.server_of[list(best_fit(cluster, free, degree))])) == fewest


def _reference_rules(cluster, free, degree):
    """Plain re-statements of the rules' docstrings, for comparison."""
    per = [[d for d in devs if free[d]] for devs in cluster.devices_of_server]
    if free.sum() < degree:
        return None, None
    holders = [s for s, p in enumerate(per) if len(p) >= degree]
    if holders:
        best = tuple(per[min(holders, key=lambda s: (len(per[s]), s))][:degree])
    else:
        chosen = []
        for s in sorted(range(len(per)), key=lambda s: (-len(per[s]), s)):
            chosen.extend(per[s][: degree - len(chosen)])
        best = tuple(sorted(chosen[:degree]))
    nonempty = [p for p in per if p]
    rounds = [p[r] for r in range(max(len(p) for p in nonempty)) for p in nonempty if r < len(p)]
    return best, tuple(sorted(rounds[:degree]))


@settings(max_examples=300, deadline=None)
@given(case=occupancies())
def test_best_fit_and_spread_match_their_plain_statement(case):
    cluster, free, degree = case
    assert (best_fit(cluster, free, degree), spread(cluster, free, degree)) == _reference_rules(cluster, free, degree)


@pytest.mark.parametrize(
    ("count", "message"), [(10**9, "less than or equal to 1000000"), (200_000, "hold 1,600,000 devices; at most 1,000,000")]
)
def test_a_cluster_file_with_absurd_counts_is_one_line(tmp_path, count, message):
    path = tmp_path / "big.toml"
    path.write_text(
        'name = "big"\n[device_types.gpu]\nmemory_bytes = 1e10\nspeed = 1.0\n'
        f'[[servers]]\ncount = {count}\ndevices_per_server = 8\ndevice_type = "gpu"\n'
        "[links.intra_server]\nbandwidth_Bps = 8e9\nlatency_s = 0.0\n[links.inter_server]\nbandwidth_Bps = 1e9\nlatency_s = 0.0\n"
    )
    with pytest.raises(ClusterSpecError, match=message):
        load_cluster(path)


@pytest.mark.parametrize("preset", ["dgx8x8", "mixed"])
def test_idle_placements_are_the_rules_on_the_whole_cluster_and_on_each_device_type_alone(preset):
    cluster = load_cluster(preset)
    kinds = np.asarray(cluster.device_type)
    masks = [np.ones(cluster.num_devices, dtype=bool)] + [kinds == t for t in set(cluster.device_type)]
    for degree in (1, 4, 8, 12, cluster.num_devices, cluster.num_devices + 1):
        expected = {d for mask in masks for rule in PLACEMENT_RULES.values() if (d := rule(FreeDevices(cluster, mask), degree))}
        assert idle_placements(cluster, degree) == sorted(expected)
    a100 = [d for d in range(cluster.num_devices) if cluster.device_type[d] == "A100-80GB"]
    assert tuple(a100[:8]) in idle_placements(cluster, 8)
    if preset == "mixed":  # the V100 servers alone: a placement no rule gives on the whole cluster
        v100 = tuple(d for d in range(cluster.num_devices) if cluster.device_type[d] == "V100-16GB")[:8]
        assert v100 in idle_placements(cluster, 8)
        assert v100 not in {rule(FreeDevices(cluster, masks[0]), 8) for rule in PLACEMENT_RULES.values()}


@pytest.mark.parametrize("name", ["pacml", "dgx8x8", "mixed"])
def test_rule_indices_are_the_rules_on_the_free_counts_alone(name):
    """rule_indices, which sees only each server's free count, picks the devices every rule picks on the mask."""
    cluster, rng = load_cluster(name), np.random.default_rng(0)
    for _ in range(200):
        free = rng.random(cluster.num_devices) < rng.uniform(0, 1)
        devices = FreeDevices(cluster, free)
        starts, counts = devices.runs
        for degrees in (range(1, 17), (16, 3, 9)):
            for rule, place in PLACEMENT_RULES.items():
                indices = rule_indices(starts, counts, rule, degrees)
                picked = [None if idx is None else tuple(devices.ids[j] for j in idx) for idx in indices]
                assert picked == [place(FreeDevices(cluster, free), degree) for degree in degrees], (rule, free)
