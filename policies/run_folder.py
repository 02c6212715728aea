"""A training run's folder: made for a new run, and resumed only with the same config and the same policy files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from placer.common.errors import PolicyError, TrainingError
from placer.policies.config import TrainConfig


def prepare_out(out: Path, *, resume: bool, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise TrainingError(f"--out {str(out)!r} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (resume or force):
        raise TrainingError(f"--out {str(out)!r} is not empty: pass --resume to continue that run or --force to start over in it")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrainingError(f"cannot create --out {str(out)!r}: {exc.strerror or exc}") from None


RESUME_MAY_CHANGE = {"train": ("timesteps", "eval_workers", "ray", "device"), "ppo": ("vec_env",)}  # budget and spread, not what it learns


def _without_budget(config: dict) -> dict:
    """The config minus what a resume may change (:data:`RESUME_MAY_CHANGE`): the step budget, which it may raise, and the
    processes and device it runs on (``eval_workers``: the same rates for any count; ``[ppo] vec_env``: the same rollouts)."""
    kept = {section: {k: v for k, v in config.get(section, {}).items() if k not in keys} for section, keys in RESUME_MAY_CHANGE.items()}
    return {**config, **kept}


INPUTS = "inputs.json"  # the sha256 of each policy file the config names, beside config.json
POLICY_FILE_FIELDS = ("init_policy", "candidate_policy_file")


def policy_inputs(config: TrainConfig) -> dict[str, str]:
    """``{field: sha256}`` of each policy file ``config``'s ``[train]`` names (:data:`POLICY_FILE_FIELDS`): what a run
    read, whatever the folder it was read from."""
    named = {field: getattr(config.train, field) for field in POLICY_FILE_FIELDS}
    return {field: file_sha256(Path(path)) for field, path in named.items() if path}


def check_same_config(saved: Path, config: TrainConfig, inputs: dict[str, str]) -> None:
    """Refuse to resume the run whose ``config.json`` is ``saved`` with another ``config`` (what a resume may change
    aside). Where the run recorded its policy files' content (:data:`INPUTS`), those files are compared by content, not
    by path: a run folder copied elsewhere resumes, and a file replaced at the same path does not."""
    try:
        previous = TrainConfig.model_validate_json(saved.read_text()).model_dump(mode="json")  # older layouts read too
    except ValueError:
        raise TrainingError(f"{saved} is not a training config; it cannot be resumed") from None
    current = config.model_dump(mode="json")
    recorded = saved.parent / INPUTS
    if recorded.exists():
        if json.loads(recorded.read_text()) != inputs:
            fields = ", ".join(POLICY_FILE_FIELDS)
            raise TrainingError(f"{saved.parent} was trained from other policy files ({fields}); resume with the same files")
        previous, current = (_without_policy_paths(c) for c in (previous, current))
    if _without_budget(previous) != _without_budget(current):
        raise TrainingError(f"{saved.parent} was trained with another config; resume with the same --config")


def _without_policy_paths(config: dict) -> dict:
    """``config`` (a dumped :class:`TrainConfig`) without the paths of :data:`POLICY_FILE_FIELDS`."""
    return {**config, "train": {k: v for k, v in config["train"].items() if k not in POLICY_FILE_FIELDS}}


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of ``path``'s bytes (a policy file named by a config: its content, not its name, is what was tuned)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {str(path)!r}: {exc.strerror or exc}") from None
