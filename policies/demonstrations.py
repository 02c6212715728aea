"""Recorded decisions (:class:`Demonstrations`), their ``.npz`` files, and a recording kept episode by episode.

A :class:`Spool` is a folder a recording writes each finished episode's decisions into as it goes (``episode-E.npz``,
written atomically, with the env's random state after that episode). A recording stopped part-way (a crash, a session's
end) reads them back and plays on from the episode after the last one kept, so it records the same decisions as one
never stopped, losing at most the episode in flight. The folder says nothing of what made the recording: its caller
names it by that (:func:`placer.policies.warm.recorded` by the recording's digest).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from placer.common.atomic import write_atomic

ARRAYS = ("masks", "actions", "returns", "targets")  # a file's arrays that are the demonstrations' own (besides dynamic.*)
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)  # a file missing, cut short or not ours


@dataclass
class Demonstrations:
    dynamic: dict[str, np.ndarray]  # per-sample observation arrays, stacked (the graph as its id)
    masks: np.ndarray  # (S, num_actions) bool
    actions: np.ndarray  # (S,) int64
    returns: np.ndarray  # (S,) float32: the teacher's discounted return from each step (its episode played out)
    targets: np.ndarray  # (S, num_actions) float32: the teacher's soft targets (one-hot where it did not plan)

    def __len__(self) -> int:
        return len(self.actions)

    def batch(self, index: np.ndarray) -> dict[str, torch.Tensor]:
        return {k: torch.from_numpy(v[index]).float() for k, v in self.dynamic.items()}


def merge(parts: list[Demonstrations]) -> Demonstrations:
    """One set of demonstrations from several (recorded with the same config: graph ids agree)."""
    return Demonstrations(
        {k: np.concatenate([part.dynamic[k] for part in parts]) for k in parts[0].dynamic},
        np.concatenate([part.masks for part in parts]),
        np.concatenate([part.actions for part in parts]),
        np.concatenate([part.returns for part in parts]),
        np.concatenate([part.targets for part in parts]),
    )


def save_demonstrations(path: Path, data: Demonstrations, **extra: np.ndarray) -> None:
    """Write ``data`` (and ``extra`` arrays beside it) to the ``.npz`` at ``path``, atomically, making its folder."""
    arrays: dict[str, Any] = {f"dynamic.{name}": value for name, value in data.dynamic.items()}
    arrays |= {"masks": data.masks, "actions": data.actions, "returns": data.returns, "targets": data.targets, **extra}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())


def load_demonstrations(path: Path) -> tuple[Demonstrations, dict[str, np.ndarray]]:
    """The demonstrations in the ``.npz`` at ``path`` and its other arrays by name; raises one of :data:`UNREADABLE`."""
    with np.load(path) as kept:
        dynamic = {name.removeprefix("dynamic."): kept[name] for name in kept.files if name.startswith("dynamic.")}
        data = Demonstrations(dynamic, kept["masks"], kept["actions"], kept["returns"], kept["targets"])
        extra = {name: kept[name] for name in kept.files if not name.startswith("dynamic.") and name not in ARRAYS}
    return data, extra


@dataclass(frozen=True)
class Kept:
    """What a spool held: its episodes' decisions in order, the last episode's index (-1: none) and the env's random
    state after it (``None``: none kept)."""

    parts: list[Demonstrations]
    last_episode: int = -1
    rng_state: dict[str, Any] | None = None


class Spool:
    """A recording's episodes, each kept in ``folder`` as it finishes (see the module's docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def kept(self) -> Kept:
        """The episodes kept so far, up to the first file that is unreadable (the rest are recorded again)."""
        parts: list[Demonstrations] = []
        last, state = -1, None
        for path in sorted(self.folder.glob("episode-*.npz")):
            try:
                data, extra = load_demonstrations(path)
                last, state = int(extra["episode"]), json.loads(str(extra["rng_state"]))
            except UNREADABLE:
                break
            parts.append(data)
        return Kept(parts, last, state)

    def keep(self, episode: int, data: Demonstrations, rng_state: Mapping[str, Any]) -> None:
        """Keep episode ``episode``'s decisions with the env's random state after it (a numpy bit generator's state)."""
        extra = {"episode": np.array(episode), "rng_state": np.array(json.dumps(dict(rng_state)))}
        save_demonstrations(self.folder / f"episode-{episode:07d}.npz", data, **extra)
