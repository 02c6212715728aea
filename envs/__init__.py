"""Gymnasium environments over the placer simulator. Importing registers
``placer/ClusterPlacement-v0`` (kwargs: the fields of :class:`envs.config.EnvConfig`)."""

import gymnasium as gym

from envs.config import EnvConfig
from envs.env import ClusterPlacementEnv

ENV_ID = "placer/ClusterPlacement-v0"

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="envs.env:ClusterPlacementEnv")

__all__ = ["ENV_ID", "ClusterPlacementEnv", "EnvConfig"]
