"""A cluster spec as TOML text (the format :mod:`placer.cluster.topology` reads), with a comment block on top."""

from __future__ import annotations

import json
from collections.abc import Sequence

from placer.cluster.topology import ClusterSpec


def cluster_toml(spec: ClusterSpec, comment: Sequence[str] = ()) -> str:
    """TOML for ``spec``; each line of ``comment`` becomes a ``#`` line above it."""
    out = [f"# {line}".rstrip() for line in comment]
    out.append(f"name = {json.dumps(spec.name)}")
    for type_name, dtype in spec.device_types.items():
        out += ["", f"[device_types.{json.dumps(type_name)}]", *_pairs(dtype.model_dump(exclude_none=True))]
    for group in spec.servers:
        out += ["", "[[servers]]", *_pairs(group.model_dump())]
    for link_name in ("intra_server", "inter_server"):
        out += ["", f"[links.{link_name}]", *_pairs(getattr(spec.links, link_name).model_dump())]
    out += ["", "[overheads]", *_pairs(spec.overheads.model_dump())]
    if spec.communication is not None:
        out += ["", "[communication]", *_pairs(spec.communication.model_dump())]
    if spec.resize is not None:
        out += ["", "[resize]", *_pairs(spec.resize.model_dump())]
    for job_name, job in spec.jobs.items():
        out += ["", f"[jobs.{json.dumps(job_name)}]", *_pairs(job.model_dump())]
    if spec.calibrated is not None:
        out += ["", "[calibrated]", *_pairs(spec.calibrated.model_dump(exclude_none=True))]
    return "\n".join(out) + "\n"


def _pairs(fields: dict) -> list[str]:
    return [f"{key} = {_value(value)}" for key, value in fields.items()]


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else json.dumps(str(value))
    return json.dumps(value)
