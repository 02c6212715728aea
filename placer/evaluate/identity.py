"""What each evaluated policy is beyond its name: the policy file it reads, by path and by content (sha256).

A heuristic's name says all it does. A policy of a plug-in (``learned``) reads a file: its own (``learned:PATH.pt``), a
shipped one (``learned:NAME``) or the evaluation's ``--policy-file`` (``learned``; the shipped default without one).
``results.json`` records each such file and its sha256 (:func:`policy_files`), so that two evaluations of a ``learned``
from two different files are never taken for one (:func:`placer.evaluate.results.merge_results`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec, names_a_file
from placer.common.shipped import default_policy_file, shipped_policy_file
from placer.evaluate.config import EvaluationConfig


def policy_file(config: EvaluationConfig, name: str) -> Path | None:
    """The file the policy evaluated as ``name`` reads (None for a heuristic or planner)."""
    spec = PolicySpec.parse(config.spec_of(name))
    if spec.kind in HEURISTIC_KINDS:
        return None
    if (value := spec.positional) is not None:
        return Path(value) if names_a_file(value) else shipped_policy_file(value)
    return Path(config.policy_file) if config.policy_file else default_policy_file()


def reads_policy_file(config: EvaluationConfig) -> bool:
    """Whether some evaluated policy reads ``config.policy_file`` (a ``learned`` that names no file or shipped policy)."""
    specs = (PolicySpec.parse(config.spec_of(name)) for name in config.policies)
    return any(spec.kind not in HEURISTIC_KINDS and spec.positional is None for spec in specs)


def file_text(config: EvaluationConfig, name: str) -> str:
    """The policy file of ``name`` as results written before files were hashed name it: the path as given, or
    ``the shipped default`` for ``learned`` without ``--policy-file``."""
    spec = PolicySpec.parse(config.spec_of(name))
    if spec.positional is None and not config.policy_file:
        return "the shipped default"
    return os.path.normpath(str(policy_file(config, name)))


def sha256_of(path: Path) -> str:
    """The sha256 of the file at ``path`` (hex)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def policy_files(config: EvaluationConfig) -> dict[str, dict[str, str]]:
    """Per evaluated policy that reads a file which is there: ``{"file": path, "sha256": hex}`` (``results.json``'s
    ``record.policy_files``). A file that is missing is left out: building the policy says so in one line."""
    found = {}
    for name in config.policies:
        path = policy_file(config, name)
        if path is not None and path.is_file():
            found[name] = {"file": os.path.normpath(str(path)), "sha256": sha256_of(path)}
    return found
