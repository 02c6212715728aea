"""The warm start of a training run: behaviour cloning of its teacher (:mod:`placer.policies.imitation`) or given weights.

The decisions recorded for cloning (the teacher's, then each DAgger round's on the learner's own states) are kept in the
run's ``recorded/`` folder (:func:`recorded`), each with a digest of what made it (the env config, the teacher and its
table, the seed, and for a DAgger round what made its learner: the network's settings, the cloning's, and the digests of
the recordings it was cloned on), so a run stopped after a recording (a crash, a session's end) records none of them
again on ``--resume``; a recording whose digest differs is made anew. A recording cut short keeps its finished episodes
(:class:`~placer.policies.demonstrations.Spool`, a folder named by its digest), and a resume plays on from the last. A DAgger
round is keyed by how its learner was made, not by its weights: a clone made again from the same recordings may differ
in the last bits (threaded sums), and the states it visits serve the round as well. Each clone is kept there too
(``clone-R.pt``: the weights after cloning on the teacher's recording and R DAgger rounds), keyed the same way, so a
resumed run clones no round again. The digest names no code version: after a change to the env's observations or a
teacher, delete ``recorded/`` (as ``tuning.json``).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from placer.common.atomic import atomic_path
from placer.common.errors import TrainingError
from placer.envs.config import EnvConfig
from placer.policies.config import TrainConfig
from placer.policies.demonstrations import UNREADABLE, Demonstrations, load_demonstrations, merge, save_demonstrations
from placer.policies.imitation import agreement, clone, collect
from placer.policies.model import build_policy, load_policy_file, widened_for_advice, widened_for_resizes

RECORDED = "recorded"  # the run's folder of kept recordings


def warm_start(
    model: MaskablePPO,
    config: TrainConfig,
    out: Path,
    progress: bool = False,
    members: dict[str, str] | None = None,
    weights: dict[str, torch.Tensor] | None = None,
) -> None:
    """Behaviour-clone the configured heuristic into the fresh policy (see placer.policies.imitation), or start from ``weights``
    (:func:`start_weights` of ``init_policy``); ``members``: the teacher's table when it is tuned per regime
    (:func:`teacher_members`). With ``clone_from_candidate`` the clone starts from the candidate's weights."""
    settings = config.train
    if weights is not None:
        model.policy.load_state_dict(weights)
        if settings.ppo_baseline:  # returns are now the clone's less its teacher's, about 0: a critic fitted to the raw ones is off
            torch.nn.init.zeros_(model.policy.value_net.weight)
            torch.nn.init.zeros_(model.policy.value_net.bias)
        return
    if settings.imitation_steps == 0:
        return
    if settings.clone_from_candidate and settings.candidate_policy_file:
        model.policy.load_state_dict(start_weights(settings.candidate_policy_file, config, "candidate_policy_file"))
    device = model.policy.device
    model.policy.to("cpu")  # the teacher's demonstrations and the cloning run on the CPU, PPO on its device
    try:
        _clone_teacher(model, config, out, progress, members)
    finally:
        model.policy.to(device)


def _clone_teacher(model: MaskablePPO, config: TrainConfig, out: Path, progress: bool, members: dict[str, str] | None) -> None:
    settings = config.train
    env_config = recording_env(config)
    temperature = settings.imitation_temperature
    common: dict[str, Any] = {
        "workers": settings.imitation_workers,
        "gamma": config.ppo.gamma,
        "temperature": temperature,
        "members": members,
        "per_episode": settings.imitation_per_episode,
        "policy_file": settings.candidate_policy_file,
    }
    what = recording_what(config, common)
    where: dict[str, Any] = {"ray": settings.ray, "progress": progress}  # where and how the recording runs, not what: not in ``what``
    teacher = what | {"steps": settings.imitation_steps, "seed": settings.seed}
    data = recorded(
        out / RECORDED / "warm.npz",
        teacher,
        partial(collect, env_config, settings.imitation_teacher, settings.imitation_steps, settings.seed, **where, **common),
    )
    cloning: dict[str, Any] = {
        "epochs": settings.imitation_epochs,
        "batch_size": config.ppo.batch_size,
        "learning_rate": settings.imitation_learning_rate,
        "soft": temperature > 0,
    }
    cloned_on = [recording_key(teacher)]  # the recordings the learner was cloned on, in order

    start = {"start": what["policy_file"]} if settings.clone_from_candidate else {}  # the candidate's sha256: its weights

    def learner() -> dict[str, Any]:  # how the learner is made: its network, the cloning, what it was cloned on
        made = {"policy": config.policy.model_dump(mode="json"), "seed": settings.seed, "cloning": cloning, "cloned_on": list(cloned_on)}
        return made | start

    cloned = partial(clone, model.policy, seed=settings.seed, progress=progress, **cloning)
    accuracy = kept_clone(model.policy, out / RECORDED / "clone-0.pt", learner(), partial(cloned, data))
    rounds = [{"samples": len(data), "accuracy": accuracy}]
    for r in range(settings.dagger_rounds):  # the learner's own states, labelled by the teacher
        seed = 7919 * (settings.seed + 1) + r
        round_what = what | {"steps": settings.dagger_steps, "seed": seed, "learner": learner()}
        visited = recorded(  # the learner's states: kept for the learner made the same way
            out / RECORDED / f"dagger-{r}.npz",
            round_what,
            partial(
                collect,
                env_config,
                settings.imitation_teacher,
                settings.dagger_steps,
                seed,
                learner=model.policy,
                **where,
                **common,
            ),
        )
        cloned_on.append(recording_key(round_what))
        on_own_states = agreement(model.policy, visited)  # before learning from them: how well the clone generalises
        data = merge([data, visited])
        accuracy = kept_clone(model.policy, out / RECORDED / f"clone-{r + 1}.pt", learner(), partial(cloned, data, seed=seed))
        rounds.append({"samples": len(data), "agreement_on_own_states": on_own_states, "accuracy": accuracy})
    (out / "imitation.json").write_text(
        json.dumps(
            {"teacher": settings.imitation_teacher, "members": members, "samples": len(data), "accuracy": accuracy, "rounds": rounds}
        )
        + "\n"
    )


def start_weights(path: str, config: TrainConfig, field: str) -> dict[str, torch.Tensor]:
    """The weights of the policy file at ``path`` for ``config``'s network (``field``: the config key that names it, for
    errors): a fixed policy is widened for an elastic network (:func:`~placer.policies.model.widened_for_resizes`), an unadvised
    one for advisers (:func:`~placer.policies.model.widened_for_advice`); TrainingError (one line) where its features would
    mean something else or its network does not fit."""
    policy, trained = load_policy_file(path)
    env = config.env
    differ = [f for f in ("max_degree", "rules", "strategy") if getattr(trained, f) != getattr(env, f)]  # what features mean
    if trained.advisers and trained.advisers != env.advisers:
        differ.append("advisers")
    if differ:
        raise TrainingError(f"{field} {path!r} was trained with another {', '.join(differ)}: its features would mean something else")
    weights = widened_for_resizes(policy.state_dict()) if env.elastic and not trained.elastic else policy.state_dict()
    if env.advisers and not trained.advisers:
        weights = widened_for_advice(weights, len(env.advisers), env.elastic)
    arch = config.policy
    try:
        build_policy(env, arch.hidden, arch.rounds, arch.net_arch).load_state_dict(weights)
    except RuntimeError as exc:  # torch's first line names only the class; the next names the first mismatch
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        detail = (lines[1] if len(lines) > 1 else lines[0])[:200] if lines else type(exc).__name__
        raise TrainingError(f"{field} {path!r} does not fit this config's network: {detail}") from None
    return weights


def recording_env(config: TrainConfig) -> EnvConfig:
    """The env the warm start records in: ``config.env``, without [env.workload]'s replayed arrival structures where
    ``record_replayed`` is false and it has others (a setting's own structure, e.g. PAC-ML's iid, is its own). Replayed
    arrivals' bursts made the recipe's clone and students imitate worse (measured when the recipe was made)."""
    structures = config.env.workload.structures
    kept = [s.spec for s in structures if s.replay is None]
    if config.train.record_replayed or len(kept) in (0, len(structures)):
        return config.env
    return config.env.with_changes(workload=config.env.workload.model_dump() | {"structure": kept})


def recording_what(config: TrainConfig, common: Mapping[str, Any]) -> dict[str, Any]:
    """What decides a recording of ``config``'s teacher besides its steps and seed (JSON): the env, the teacher and
    ``common`` (collect's other settings), a candidate teacher's policy file by the sha256 of its bytes, not its path
    (a run folder copied or resumed under another ``--out`` reads its recordings back)."""
    what = {"env": recording_env(config).model_dump(mode="json"), "teacher": config.train.imitation_teacher, **common}
    if config.train.candidate_policy_file:
        what["policy_file"] = hashlib.sha256(Path(config.train.candidate_policy_file).read_bytes()).hexdigest()
    return what


def recorded(path: Path, what: Mapping[str, Any], record: Callable[..., Demonstrations]) -> Demonstrations:
    """The demonstrations kept at ``path`` (an ``.npz``) when they were made from ``what`` (JSON: what decides the
    recording), else ``record(spool=spool)``'s, kept there for the next run. A file cut short or unreadable is recorded anew.
    ``spool`` is the folder beside ``path``, named by the recording's digest, that the recording keeps its episodes in
    as it goes (:class:`~placer.policies.demonstrations.Spool`): a recording stopped part-way goes on from its last kept
    episode. It is removed once the whole recording is kept."""
    key = recording_key(what)
    try:
        data, extra = load_demonstrations(path)
        if str(extra["key"]) == key:
            return data
    except UNREADABLE:  # none kept, or not whole
        pass
    spool = path.with_name(f"{path.stem}.{key[:16]}.episodes")
    data = record(spool=spool)
    save_demonstrations(path, data, key=np.array(key))
    shutil.rmtree(spool, ignore_errors=True)
    return data


def kept_clone(policy: torch.nn.Module, path: Path, learner: Mapping[str, Any], fit: Callable[[], float]) -> float:
    """``fit()`` (a clone of ``policy``: its accuracy), or the weights and accuracy kept at ``path`` (a ``.pt``) by a
    clone made as ``learner`` (JSON) says, loaded into ``policy``; a clone made here is kept there for the next run."""
    key = recording_key(learner)
    try:
        kept = torch.load(path, map_location="cpu", weights_only=True)
        if kept["key"] == key:
            policy.load_state_dict(kept["state_dict"])
            return float(kept["accuracy"])
    except (OSError, RuntimeError, KeyError, EOFError, pickle.UnpicklingError):  # none kept, or not whole
        pass
    accuracy = fit()
    state = {k: v.detach().cpu() for k, v in policy.state_dict().items()}
    with atomic_path(path) as tmp:
        torch.save({"key": key, "accuracy": accuracy, "state_dict": state}, tmp)
    return accuracy


def recording_key(what: Mapping[str, Any]) -> str:
    """The hex digest a recording made from ``what`` (JSON) is kept under."""
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
