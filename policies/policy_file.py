"""Policy files as data: read one's settings and weights (numpy arrays) without torch.

A policy file is a ``torch.save`` of a dict of plain data and tensors::

    {"format": "placer.policy", "version": 3, "env": {...EnvConfig fields...},
     "policy": {"hidden", "rounds", "net_arch"}, "state_dict": {...}}

:mod:`placer.policies.model` writes it and builds the torch policy from it (training); inference needs only
the numbers (:mod:`placer.policies.inference`), and importing torch would cost more than the decision.
:func:`read_policy_file` reads the archive ``torch.save`` writes (a zip: ``<root>/data.pkl``, the
pickled dict, whose tensors name their bytes ``<root>/data/<key>``) with an unpickler that knows
only what a dict of tensors and plain containers names: ``collections.OrderedDict``,
``torch._utils._rebuild_tensor_v2`` and the typed storages, each tensor checked to lie inside its
storage. Anything else (code, as in a crafted file, or a layout another torch release writes) is
handed to ``torch.load(weights_only=True)``, which reads what it can and refuses code: the
fast reader gives the same payload or none.
"""

from __future__ import annotations

import collections
import pickle
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from placer.common.errors import PlacerError, PolicyError
from placer.envs.config import EnvConfig

FORMAT, VERSION = "placer.policy", 3
# torch's typed storages (the names torch.save pickles) and their element types
STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


@dataclass(frozen=True, eq=False)
class PolicyPayload:
    """What a policy file holds: the env it was trained for, its architecture and its weights (float32 arrays, by the
    torch policy's state-dict names; each an own, writable copy)."""

    env: EnvConfig
    hidden: int
    rounds: int
    net_arch: list[int]
    state_dict: dict[str, np.ndarray]

    def digest(self) -> str:
        """sha256 of what the policy decides by: the env, the architecture and the weights' names, shapes and values.
        Two files of the same policy share it (``torch.save`` writes a fresh id into every file, so their bytes do not)."""
        import hashlib

        h = hashlib.sha256(self.env.model_dump_json().encode())
        h.update(repr((self.hidden, self.rounds, self.net_arch)).encode())
        for name in sorted(self.state_dict):
            array = np.ascontiguousarray(self.state_dict[name])
            h.update(f"{name}:{array.dtype}:{array.shape}".encode())
            h.update(array.tobytes())
        return h.hexdigest()


def malformed(path: Path, exc: BaseException) -> PolicyError:
    """The one error of a policy file whose settings are missing or wrong."""
    return PolicyError(f"{path}: malformed policy file: missing or bad field {exc}")


def read_policy_file(path: str | Path) -> PolicyPayload:
    """The payload of the policy file at ``path``; PolicyError (one line) if it is missing, not a policy file, of
    another format version, or holds malformed settings. The weights are not checked against the architecture here."""
    path = Path(path)
    if not path.exists():
        raise PolicyError(f"policy file {str(path)!r} does not exist")
    try:
        payload = _read_archive(path)
    except Exception:  # not an archive this reader knows: torch decides (a policy file from another release, or code)
        payload = _torch_load(path)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or payload.get("version") != VERSION:
        raise PolicyError(f"{path}: not a placer policy file (format {FORMAT} v{VERSION})")
    try:
        env = EnvConfig.model_validate(payload["env"])  # files written before the workload was nested have it flat
        arch = payload["policy"]
        hidden, rounds, net_arch = arch["hidden"], arch["rounds"], arch["net_arch"]
        if not (isinstance(hidden, int) and isinstance(rounds, int) and isinstance(net_arch, list)):
            raise TypeError(f"'policy': hidden {hidden!r}, rounds {rounds!r}, net_arch {net_arch!r}")
        weights = payload["state_dict"]
        if not (isinstance(weights, dict) and all(isinstance(v, np.ndarray) for v in weights.values())):
            raise TypeError("'state_dict': not a dict of tensors")
    except (KeyError, TypeError, AttributeError, ValueError, PlacerError) as exc:
        raise malformed(path, exc) from None
    return PolicyPayload(env, hidden, rounds, list(net_arch), {str(k): v for k, v in weights.items()})


def _torch_load(path: Path) -> Any:
    """The payload as ``torch.load(weights_only=True)`` reads it, tensors as numpy arrays."""
    import torch

    try:
        with warnings.catch_warnings():  # torch warns before refusing a plain pickle; the error below says it all
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt file, or one holding code: refuse either way
        raise PolicyError(f"{path}: not a placer policy file ({type(exc).__name__})") from None
    if isinstance(payload, dict) and isinstance(payload.get("state_dict"), dict):
        weights = payload["state_dict"]
        payload["state_dict"] = {k: v.detach().cpu().numpy().copy() if isinstance(v, torch.Tensor) else v for k, v in weights.items()}
    return payload


class _StorageType:
    """A typed storage class as the pickle names it (``torch.FloatStorage``): its element type."""

    def __init__(self, dtype: type) -> None:
        self.dtype = np.dtype(dtype)


class _Unsupported(Exception):
    """The archive names something this reader does not know."""


def _read_archive(path: Path) -> Any:
    """The pickled payload of a ``torch.save`` zip archive, tensors as numpy arrays; _Unsupported (or another error) when
    it holds anything but tensors and plain containers."""
    with zipfile.ZipFile(path) as archive:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl") and name.count("/") == 1]
        if len(pickles) != 1:
            raise _Unsupported("no single data.pkl")
        root = pickles[0].removesuffix("data.pkl")
        names = set(archive.namelist())
        order = archive.read(root + "byteorder").decode() if root + "byteorder" in names else "little"
        if order not in ("little", "big"):
            raise _Unsupported(f"byte order {order!r}")
        storages: dict[str, np.ndarray] = {}

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                if (module, name) == ("collections", "OrderedDict"):
                    return collections.OrderedDict
                if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                    return _rebuild_tensor
                if module == "torch" and name in STORAGE_DTYPES:
                    return _StorageType(STORAGE_DTYPES[name])
                raise _Unsupported(f"{module}.{name}")

            def persistent_load(self, pid: Any) -> np.ndarray:
                kind, storage_type, key, _location, numel = pid
                if kind != "storage" or not isinstance(storage_type, _StorageType) or not isinstance(key, str):
                    raise _Unsupported(f"persistent id {pid!r}")
                if key not in storages:
                    dtype = storage_type.dtype.newbyteorder("<" if order == "little" else ">")
                    data = np.frombuffer(archive.read(f"{root}data/{key}"), dtype=dtype)
                    if len(data) != numel:
                        raise _Unsupported(f"storage {key}: {len(data)} elements, the pickle says {numel}")
                    storages[key] = data
                return storages[key]

        with archive.open(pickles[0]) as fh:
            return Unpickler(fh).load()


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple, stride: tuple, _grad: bool, hooks: Any, *metadata: Any) -> np.ndarray:
    """A tensor's values as an own, native-order array: ``storage[offset]`` and on, ``size`` elements at ``stride``."""
    if hooks or any(metadata) or len(size) != len(stride) or offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise _Unsupported("a tensor with hooks, metadata or a negative size, stride or offset")
    if 0 in size:
        return np.zeros(size, dtype=storage.dtype.newbyteorder("="))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if last >= len(storage):  # as_strided reads whatever memory it is pointed at: never past the storage
        raise _Unsupported("a tensor outside its storage")
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size, strides=[s * item for s in stride], writeable=False)
    return np.array(view, dtype=storage.dtype.newbyteorder("="), order="C")
