"""The shipped policy files make the same decisions, whatever the observation's plumbing.

Pinned on a fixed stream (dgx8x8 / mixed, EDF queue with backfilling, load 1.3, two graphs the
policies never saw in training) before the observation builder was rewritten; a change in
features, graph encoding or action decoding shows up here as a different decision.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from placer.cluster.topology import load_cluster
from placer.common.shipped import shipped_policy_file
from placer.cost import CostModel
from placer.policies.loading import LearnedPolicy
from placer.sim.queueing import QueueConfig
from placer.sim.rollout import simulate
from placer.sim.types import Place
from tests.policies.streams import stream

RETIRED = Path(__file__).resolve().parents[2] / "experiments" / "policies"  # the retired policies, named by their files
GRAPHS = ("alexnet", "gnmt", "resnet50", "bert_base", "densenet121")  # bert_base: unseen in training


def _decisions(policy_file: str, cluster: str, structure: str) -> list[tuple[int, tuple[int, ...] | None]]:
    cost = CostModel(load_cluster(cluster))
    jobs = stream(cost, GRAPHS, 1.3, 60, seed=7, structure=structure)
    shipped = shipped_policy_file(policy_file.removesuffix(".pt"))
    learned = LearnedPolicy.from_file(shipped if shipped.exists() else RETIRED / policy_file)  # a retired one: experiments/
    learned.reset(np.random.default_rng(0))
    out = []

    def decide(job, view):
        chosen = learned.decide(job, view)
        out.append((job.job_id, tuple(map(int, chosen.devices)) if isinstance(chosen, Place) else None))
        return chosen

    simulate(cost, jobs, decide, queue=QueueConfig.parse("edf-bf"))
    return out


@pytest.mark.parametrize(
    ("policy_file", "cluster", "structure", "degrees", "digest"),
    [
        (
            "pacml.pt",
            "dgx8x8",
            "iid",
            [2, 2, 3, 4, 2, 4, 4, 3, 4, 3, 3, 2, 5, 3, 3, 4, 12, 2, 3, 5, 3, 3, 2, 5, 12, 5, 3, 11, 2, 4],
            "f7427132e686f7b8",
        ),
        (
            "history.pt",
            "mixed",
            "daily+sweeps",
            [3, 2, 4, 2, 3, 3, 3, 5, 5, 5, 5, 5, 12, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 0],
            "2f9abdf797dec053",
        ),
        (  # reads the offered load (the meter) as well
            "regimes.pt",
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 2, 3, 0, 0, 0, 3, 3, 3, 2, 2, 0, 0, 0],
            "2e1ac0d38d1f95f0",
        ),
        (  # the clone (experiments/configs/clone.toml), taught by best with its lean+best_fit members
            "clone.pt",
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0],
            "2b1052bc5bf4f19b",
        ),
        (  # the default: the clone after 100,000 anchored PPO steps (experiments/configs/default.toml): the same first 30
            "default.pt",  # degrees, other devices from the 6th decision on
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0],
            "405853742d10dc64",
        ),
        (  # the candidate: the default after 40,000 anchored PPO steps at load 0.5 and on mixed at 0.9 (targeted.toml)
            "targeted.pt",
            "mixed",
            "iid",
            [2, 2, 3, 4, 2, 4, 4, 3, 4, 3, 3, 2, 0, 3, 0, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0, 13],
            "6984cfcffcc42a97",
        ),
        (  # a clone shown its teacher's members' decisions (advised.toml, envs/advice.py): advisers in the run
            "advised.pt",
            "mixed",
            "iid",
            [2, 2, 3, 4, 2, 4, 4, 3, 4, 3, 3, 2, 5, 3, 3, 4, 13, 2, 3, 5, 3, 3, 2, 5, 5, 3, 0, 2, 12, 2],
            "8a13f91384cce72e",
        ),
        (  # advised.toml's student taught by learned:default where it blocked less in tuning (blend.toml): the default's
            "blend.pt",  # first 30 degrees, other devices
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0],
            "a70d8b5032ef9bfe",
        ),
        (  # blend.toml with teacher_margin = 0.1 (blend-margin.toml): the default teaches only dgx8x8 at 0.7-1.3
            "blend-margin.pt",
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0],
            "2700141ad16e00f1",
        ),
        (  # blend-margin.toml with 3.5x the episodes at load 0.5 (blend-quiet.toml): the same teacher table
            "placer.pt",  # blend-quiet.pt, shipped
            "dgx8x8",
            "daily",
            [3, 6, 4, 7, 3, 3, 1, 3, 3, 8, 8, 2, 4, 4, 8, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 3, 0, 0, 0],
            "b549d6ae534c885c",
        ),
    ],
)
def test_shipped_policies_make_the_pinned_decisions(policy_file, cluster, structure, degrees, digest):
    decisions = _decisions(policy_file, cluster, structure)
    chosen = [0 if devices is None else len(devices) for _, devices in decisions]
    assert chosen[:30] == degrees  # 0: rejected or held
    assert hashlib.sha256(repr(decisions).encode()).hexdigest()[:16] == digest  # every decision, devices included
