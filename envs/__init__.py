"""Gymnasium environments over the placer simulator: ``placer/ClusterPlacement-v0`` (:data:`ENV_ID`; kwargs: the
fields of :class:`placer.envs.config.EnvConfig`), the class :class:`placer.envs.env.ClusterPlacementEnv`.

Importing ``placer.envs`` imports neither gymnasium nor the env, so that deciding with a trained policy
(which reads observations and configs from here) pays for neither. The id is registered with
gymnasium all the same whichever comes first: here, when gymnasium is already imported; by
:mod:`placer.envs.env` when it is imported; otherwise as soon as gymnasium is (a one-shot import hook,
:func:`_register_on_import`), so ``import placer.envs`` then ``gymnasium.make(placer.envs.ENV_ID)`` works as it
always did. ``placer.envs.ClusterPlacementEnv`` imports the env on first use.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from placer.envs.config import EnvConfig

if TYPE_CHECKING:
    from placer.envs.env import ClusterPlacementEnv

ENV_ID = "placer/ClusterPlacement-v0"

__all__ = ["ENV_ID", "ClusterPlacementEnv", "EnvConfig", "register"]


def register() -> None:
    """Register :data:`ENV_ID` with gymnasium (imports gymnasium, not the env; once however often called)."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="placer.envs.env:ClusterPlacementEnv")


def __getattr__(name: str) -> Any:
    if name == "ClusterPlacementEnv":
        from placer.envs.env import ClusterPlacementEnv

        return ClusterPlacementEnv
    raise AttributeError(f"module 'placer.envs' has no attribute {name!r}")


class _RegisterOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds nothing itself: when gymnasium is first imported, lets the other finders find it, loads it with their
    loader, then calls :func:`register`; it leaves ``sys.meta_path`` at once, so it acts once."""

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # as the import would find it without this hook
        if spec is None or spec.loader is None:
            return spec
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:  # gymnasium as its own loader would leave it
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        register()


def _register_on_import() -> None:
    """Register now if gymnasium is imported, else when it is (see the module's docstring)."""
    if "gymnasium" in sys.modules:
        register()
    elif not any(isinstance(finder, _RegisterOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterOnImport())


_register_on_import()
