"""The regime of an episode: what :meth:`placer.envs.env.ClusterPlacementEnv.reset` draws, typed, with its one-string key.

A regime is a cluster, an offered load, a beta distribution, a queue, a job-length spread and a stream structure, each
as its parsed spec names it (``reset``'s ``info`` carries the same six fields). Tables keyed by regime (a baseline per
regime, ``best``'s members, a teacher's tuning scores) are written with :attr:`Regime.key`,
``cluster|load|beta_dist|queue|size|structure``, and read back with :meth:`Regime.parse`, its exact inverse: a key that
is not one (a field short, a load that is not a number, or one written another way than :attr:`Regime.key` writes it)
is one line where the table is read, not a missing entry at some later episode. A field pooled over is written ``*``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from placer.common.errors import EnvConfigError

REGIME_FIELDS = ("cluster", "load", "beta_dist", "queue", "size", "structure")  # in key order; reset's info names them so
POOLED = "*"  # a field the regime is pooled over (every value of it)


@dataclass(frozen=True, order=True)
class Regime:
    """One regime. ``load``: the offered load (a positive float), or None where pooled over loads; the other fields are
    specs (``"edf-bf:32"``, ``"loguniform:0.1:10"``...) or :data:`POOLED`."""

    cluster: str
    load: float | None
    beta_dist: str
    queue: str
    size: str
    structure: str

    def __post_init__(self) -> None:
        for name in REGIME_FIELDS:
            value = getattr(self, name)
            if name == "load":
                if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                    raise EnvConfigError(f"regime load {value!r} is not a positive number")
            elif not isinstance(value, str) or not value or "|" in value:
                raise EnvConfigError(f"regime {name} {value!r} is not a non-empty spec without '|'")

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Regime:
        """The regime of a ``reset`` info (or any mapping holding the six fields; extra keys are ignored)."""
        missing = [name for name in REGIME_FIELDS if name not in info]
        if missing:
            raise EnvConfigError(f"not a regime: no {', '.join(missing)}")
        load = info["load"]
        return cls(
            cluster=str(info["cluster"]),
            load=None if load == POOLED else float(load),
            beta_dist=str(info["beta_dist"]),
            queue=str(info["queue"]),
            size=str(info["size"]),
            structure=str(info["structure"]),
        )

    @property
    def key(self) -> str:
        """``cluster|load|beta_dist|queue|size|structure`` (the load as Python writes a float, ``*`` where pooled)."""
        load = POOLED if self.load is None else repr(float(self.load))
        return "|".join([self.cluster, load, self.beta_dist, self.queue, self.size, self.structure])

    @classmethod
    def parse(cls, key: str) -> Regime:
        """The regime whose :attr:`key` is ``key``; one line naming the problem for anything else."""
        parts = key.split("|") if isinstance(key, str) else []
        if len(parts) != len(REGIME_FIELDS):
            raise EnvConfigError(f"regime {key!r} is not {'|'.join(REGIME_FIELDS)}")
        fields = dict(zip(REGIME_FIELDS, parts, strict=True))
        try:
            regime = cls.from_info(fields)
        except ValueError:
            raise EnvConfigError(f"regime {key!r}: load {fields['load']!r} is not a number") from None
        if regime.key != key:
            raise EnvConfigError(f"regime {key!r} is written {regime.key!r}")
        return regime

    def as_info(self) -> dict[str, Any]:
        """The six fields as ``reset``'s info names them."""
        return asdict(self)

    def pooled(self, fields: Iterable[str]) -> Regime:
        """This regime with ``fields`` pooled over (written ``*``)."""
        unknown = set(fields) - set(REGIME_FIELDS)
        if unknown:
            raise EnvConfigError(f"cannot pool over {', '.join(sorted(unknown))} (regime fields: {', '.join(REGIME_FIELDS)})")
        changes: dict[str, Any] = {name: (None if name == "load" else POOLED) for name in fields}
        return replace(self, **changes)

    def __str__(self) -> str:
        """For people: ``dgx8x8, load 0.9, beta C, iid, queue edf-bf:32, size const`` (pooled fields left out)."""
        parts = [self.cluster] if self.cluster != POOLED else []
        parts += [f"load {self.load:g}"] if self.load is not None else []
        parts += [f"beta {self.beta_dist}"] if self.beta_dist != POOLED else []
        parts += [self.structure] if self.structure != POOLED else []
        parts += [f"queue {self.queue}"] if self.queue != POOLED else []
        parts += [f"size {self.size}"] if self.size != POOLED else []
        return ", ".join(parts)


def parse_table(table: Mapping[str, str], what: str) -> dict[Regime, str]:
    """A table written regime key -> name, read: every key parsed (one line naming ``what`` and the first bad key)."""
    try:
        return {Regime.parse(key): value for key, value in table.items()}
    except EnvConfigError as exc:
        raise EnvConfigError(f"{what}: {exc}") from None
