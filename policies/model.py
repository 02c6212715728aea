"""Build the MaskablePPO model and read/write policy files (weights only, never pickled code).

A policy file is a ``torch.save`` of a dict of plain data and tensors (:mod:`placer.policies.policy_file`
says what it holds and reads it without torch); :func:`load_policy_file` builds the torch policy
from it in code. Decisions need no torch policy: :mod:`placer.policies.inference` loads one for them.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import torch

from placer.common.atomic import atomic_path
from placer.common.errors import PlacerError, PolicyError
from placer.envs.config import EnvConfig
from placer.envs.features import OPTION_FEATURES
from placer.envs.observation import GraphTable, observation_space
from placer.envs.resize import RESIZE_FEATURES
from placer.policies.extractor import PlacementExtractor
from placer.policies.policy_file import FORMAT, VERSION, malformed, read_policy_file
from placer.policies.scorer import OptionPolicy


def policy_kwargs(hidden: int, rounds: int, net_arch: list[int], graphs: GraphTable | None = None) -> dict:
    """SB3's ``policy_kwargs``; ``graphs``: the table the observations' graph ids index (training needs it)."""
    return {
        "features_extractor_class": PlacementExtractor,
        "features_extractor_kwargs": {"hidden": hidden, "rounds": rounds, "graphs": graphs},
        "net_arch": list(net_arch),
    }


def build_policy(env: EnvConfig, hidden: int, rounds: int, net_arch: list[int], graphs: GraphTable | None = None) -> OptionPolicy:
    """A fresh policy whose weights fit any policy file made with the same settings.

    ``graphs``: the table observations' graph ids index (``GraphTable.from_config(env)``), for
    whole observations; without it the caller feeds graph encodings (:class:`placer.policies.loading.LearnedPolicy`).
    """
    num_options = env.max_degree * len(env.rules)
    obs_space = observation_space(
        len(env.workload.graphs), num_options, env.max_groups, env.history, env.meter, len(env.advisers), env.elastic
    )
    action_space = gym.spaces.Discrete(1 + num_options)
    return OptionPolicy(obs_space, action_space, lambda _: 0.0, **policy_kwargs(hidden, rounds, net_arch, graphs))


def save_policy_file(path: Path, policy: torch.nn.Module, env: EnvConfig, arch: dict) -> None:
    """Write atomically: a crash mid-write leaves the previous file intact."""
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "env": env.model_dump(mode="json"),
        "policy": dict(arch),
        "state_dict": {k: v.detach().cpu() for k, v in policy.state_dict().items()},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_policy_file(path: str | Path) -> tuple[OptionPolicy, EnvConfig]:
    """The torch policy of the policy file at ``path`` (eval mode) and its env; PolicyError (one line) if the file is
    missing, not a policy file, malformed, or its weights do not fit the architecture it names."""
    path = Path(path)
    payload = read_policy_file(path)
    try:
        policy = build_policy(payload.env, payload.hidden, payload.rounds, payload.net_arch)
    except (KeyError, TypeError, AttributeError, ValueError, PlacerError) as exc:
        raise malformed(path, exc) from None
    try:
        policy.load_state_dict({k: torch.from_numpy(v) for k, v in payload.state_dict.items()})
    except RuntimeError as exc:
        raise PolicyError(f"{path}: weights do not match the policy architecture: {str(exc).splitlines()[0]}") from None
    policy.eval()
    return policy, payload.env


def widened_for_resizes(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A fixed policy's ``weights`` for an elastic network (``EnvConfig(elastic=True)``): the job MLP reads the ``resize``
    features last (:data:`placer.envs.observation.JOB_EXTRAS`), through zero weights, and the keep head
    (:class:`placer.policies.scorer.OptionScorer`) starts as a copy of the reject head, so every arriving job is decided as
    before and a resize offer is scored by the same network until training moves them."""
    out = dict(weights)
    for key, weight in weights.items():
        if key.endswith("features_extractor.job.0.weight"):
            out[key] = torch.cat([weight, weight.new_zeros(weight.shape[0], RESIZE_FEATURES)], dim=1)
        if key.startswith("mlp_extractor.reject_score."):
            out[key.replace("reject_score", "keep_score")] = weight.clone()
    return out


def widened_for_advice(weights: dict[str, torch.Tensor], advisers: int, elastic: bool = False) -> dict[str, torch.Tensor]:
    """An unadvised policy's ``weights`` for a network that also reads ``advisers`` advisers (``EnvConfig(advisers=...)``,
    :mod:`placer.envs.advice`): the job MLP reads their ``advice`` after ``history`` and ``meter`` (before ``resize`` when
    ``elastic``, :data:`placer.envs.observation.JOB_EXTRAS`) and each option row their marks after its own features, all
    through zero weights, so the widened network decides every offer exactly as the unadvised one did."""
    out = dict(weights)
    for key, weight in weights.items():
        if key.endswith("features_extractor.job.0.weight"):
            at = weight.shape[1] - (RESIZE_FEATURES if elastic else 0)
            out[key] = _zero_columns(weight, at, advisers)
        if key == "mlp_extractor.option.0.weight":
            out[key] = _zero_columns(weight, OPTION_FEATURES, advisers)
    return out


def _zero_columns(weight: torch.Tensor, at: int, count: int) -> torch.Tensor:
    """``weight`` (out, in) with ``count`` zero columns inserted before column ``at``."""
    return torch.cat([weight[:, :at], weight.new_zeros(weight.shape[0], count), weight[:, at:]], dim=1)
