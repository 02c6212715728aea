"""Where the shipped data (graphs, cluster presets, policies) lives."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The ``data/`` folder: ``$PLACER_DATA_DIR`` if set, else the one beside the package."""
    override = os.environ.get("PLACER_DATA_DIR")
    return Path(override) if override else Path(__file__).resolve().parent.parent / "data"
