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


DEFAULT_POLICY = "blend-quiet"
# The shipped policy ``learned`` loads when no file is given (``data/policies/README.md``): the one found no worse than
# `best` in every regime of the README's table, paired (docs/learning.md). ``learned:NAME`` loads ``NAME.pt`` whatever
# this is, so ``learned:default`` stays ``default.pt``, the earlier default and this one's teacher under load.


def shipped_policy_file(name: str) -> Path:
    """The shipped policy ``learned:NAME``'s file."""
    return data_dir() / "policies" / f"{name}.pt"


def default_policy_file() -> Path:
    """The file of :data:`DEFAULT_POLICY`."""
    return shipped_policy_file(DEFAULT_POLICY)
