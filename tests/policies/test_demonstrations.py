"""A recording kept episode by episode (``placer.policies.demonstrations.Spool``): stopped part-way, it goes on to the same
decisions as one never stopped, playing only the episodes it had not kept."""

import numpy as np

import placer.policies.imitation as imitation
from placer.envs.config import EnvConfig
from placer.policies.demonstrations import Spool, load_demonstrations, merge, save_demonstrations
from placer.policies.imitation import collect
from tests.policies.test_warm import _demonstrations, _same

# several clusters, loads and structures: each episode's draws come from the env's random state, which a resume restores
CONFIG = EnvConfig(
    clusters=("dgx8x8", "mixed"),
    graphs=("alexnet", "gnmt"),
    episode_jobs=24,
    loads=(0.5, 1.3),
    structure=("iid", "daily"),
    max_nodes=64,
    max_edges=128,
)


def test_a_spool_reads_back_its_episodes_in_order_up_to_the_first_unreadable_one(tmp_path):
    spool = Spool(tmp_path / "episodes")
    assert spool.kept().parts == [] and spool.kept().last_episode == -1 and spool.kept().rng_state is None
    states = [np.random.default_rng(seed).bit_generator.state for seed in range(3)]
    for episode, state in zip([0, 2, 5], states, strict=True):  # an episode that recorded nothing keeps no file
        spool.keep(episode, _demonstrations(4, episode), state)
    kept = spool.kept()
    assert kept.last_episode == 5 and kept.rng_state == states[2]  # PCG64's 128-bit integers survive the round trip
    assert all(_same(part, _demonstrations(4, e)) for part, e in zip(kept.parts, [0, 2, 5], strict=True))
    middle = tmp_path / "episodes" / "episode-0000002.npz"
    middle.write_bytes(middle.read_bytes()[:50])  # cut short: it and every episode after it are recorded again
    kept = spool.kept()
    assert len(kept.parts) == 1 and kept.last_episode == 0 and kept.rng_state == states[0]


def test_demonstrations_and_extra_arrays_round_trip_through_npz(tmp_path):
    data = _demonstrations(5, 1)
    save_demonstrations(tmp_path / "a" / "d.npz", data, key=np.array("abc"))
    back, extra = load_demonstrations(tmp_path / "a" / "d.npz")
    assert _same(back, data) and list(extra) == ["key"] and str(extra["key"]) == "abc"
    assert _same(merge([data]), data)


def test_a_recording_stopped_part_way_goes_on_to_the_same_decisions(tmp_path, monkeypatch):
    whole = collect(CONFIG, "lean", 12, seed=3, per_episode=2)
    folder = tmp_path / "episodes"
    spooled = collect(CONFIG, "lean", 12, seed=3, per_episode=2, spool=folder)
    assert _same(spooled, whole)
    files = sorted(folder.glob("episode-*.npz"))
    assert len(files) >= 6 and sum(len(load_demonstrations(f)[0]) for f in files) == len(whole)
    for path in files[3:]:  # stopped after its third kept episode
        path.unlink()
    played, real_play = [], imitation._play
    monkeypatch.setattr(imitation, "_play", lambda *args: played.append(1) or real_play(*args))
    resumed = collect(CONFIG, "lean", 12, seed=3, per_episode=2, spool=folder)
    assert _same(resumed, whole)
    assert 0 < len(played) <= len(files) - 3  # only the episodes after the last kept one (and no more than an unstopped run)
    played.clear()
    assert _same(collect(CONFIG, "lean", 12, seed=3, per_episode=2, spool=folder), whole) and played == []  # all kept


def test_a_learner_driven_recording_resumes_too(tmp_path):
    """DAgger's rounds record the learner's states: the learner is deterministic, so they resume alike."""
    import torch

    from placer.envs.observation import GraphTable
    from placer.policies.model import build_policy

    torch.manual_seed(0)
    learner = build_policy(CONFIG, 16, 1, [32], GraphTable.from_config(CONFIG))
    whole = collect(CONFIG, "lean", 8, seed=5, per_episode=2, learner=learner)
    folder = tmp_path / "dagger"
    collect(CONFIG, "lean", 8, seed=5, per_episode=2, learner=learner, spool=folder)
    for path in sorted(folder.glob("episode-*.npz"))[2:]:
        path.unlink()
    assert _same(collect(CONFIG, "lean", 8, seed=5, per_episode=2, learner=learner, spool=folder), whole)
