"""Build the MaskablePPO model and read/write policy files (weights only, never pickled code).

A policy file is a ``torch.save`` of a dict of plain data and tensors::

    {"format": "placer.policy", "version": 2, "env": {...EnvConfig fields...},
     "policy": {"hidden", "rounds", "net_arch"}, "state_dict": {...}}

and is read with ``torch.load(weights_only=True)``, which refuses anything but tensors and
plain containers, into a policy built here in code.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import torch

from envs.config import EnvConfig
from envs.observation import GraphTable, observation_space
from placer.common.atomic import atomic_path
from placer.common.errors import PlacerError, PolicyError
from policies.extractor import PlacementExtractor
from policies.scorer import OptionPolicy

FORMAT, VERSION = "placer.policy", 3


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
    whole observations; without it the caller feeds graph encodings (:class:`policies.loading.LearnedPolicy`).
    """
    num_options = env.max_degree * len(env.rules)
    obs_space = observation_space(len(env.workload.graphs), num_options, env.max_groups, env.history, env.meter, len(env.advisers))
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
    path = Path(path)
    try:
        with warnings.catch_warnings():  # torch warns before refusing a plain pickle; the error below says it all
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise PolicyError(f"policy file {str(path)!r} does not exist") from None
    except Exception as exc:  # corrupt file, or one holding code: refuse either way
        raise PolicyError(f"{path}: not a placer policy file ({type(exc).__name__})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or payload.get("version") != VERSION:
        raise PolicyError(f"{path}: not a placer policy file (format {FORMAT} v{VERSION})")
    try:
        env = EnvConfig.model_validate(payload["env"])  # files written before the workload was nested have it flat
        arch = payload["policy"]
        policy = build_policy(env, arch["hidden"], arch["rounds"], arch["net_arch"])
    except (KeyError, TypeError, AttributeError, ValueError, PlacerError) as exc:
        raise PolicyError(f"{path}: malformed policy file: missing or bad field {exc}") from None
    try:
        policy.load_state_dict(payload["state_dict"])
    except RuntimeError as exc:
        raise PolicyError(f"{path}: weights do not match the policy architecture: {str(exc).splitlines()[0]}") from None
    policy.eval()
    return policy, env
