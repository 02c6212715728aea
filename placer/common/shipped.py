"""Where the shipped data (graphs, cluster presets, configs, policies) lives."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path


def data_dir() -> Path:
    """The shipped ``data/`` folder.

    ``$PLACER_DATA_DIR`` if set; else the checkout's ``data/`` beside the package (a source tree or
    an editable install); else the copy installed with the wheel (the package ``placer.shipped``).
    """
    override = os.environ.get("PLACER_DATA_DIR")
    if override:
        return Path(override)
    beside = Path(__file__).resolve().parents[2] / "data"
    if beside.is_dir():
        return beside
    spec = find_spec("placer.shipped")  # a namespace package (data/ has no __init__.py): take its folder
    return Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else beside


DEFAULT_POLICY = "placer"
# The shipped policy ``learned`` loads when no file is given: ``data/policies/placer.pt`` (trained as blend-quiet, before
# the recipe ``data/configs/placer.toml`` existed; a recipe-built one replaces it by --promote), its card beside it.
# ``learned:pacml`` is PAC-ML's reproduction.


def shipped_policy_file(name: str) -> Path:
    """The policy ``learned:NAME``'s file: ``data/policies/NAME.pt``."""
    return data_dir() / "policies" / f"{name}.pt"


def policy_names() -> list[str]:
    """The names ``learned:NAME`` accepts: the shipped policies of ``data/policies``."""
    return sorted(path.stem for path in (data_dir() / "policies").glob("*.pt"))


def default_policy_file() -> Path:
    """The file of :data:`DEFAULT_POLICY`."""
    return shipped_policy_file(DEFAULT_POLICY)
