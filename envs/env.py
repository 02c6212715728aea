"""The Gymnasium environment: one step = one arriving job (a thin adapter over the simulator)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from envs import action as act
from envs.config import EnvConfig
from envs.observation import dynamic_arrays, graph_arrays, observation_space
from envs.reward import REWARDS, reward
from placer.catalog import resolve_graph
from placer.cluster import load_cluster
from placer.cost import CostModel
from placer.errors import PlacerError
from placer.simulator import Simulator
from placer.types import Job
from placer.workload import BetaDistribution, Workload


class ClusterPlacementEnv(gym.Env):
    """Pick a partitioning degree and a placement for each arriving job.

    Keyword arguments are the fields of :class:`envs.config.EnvConfig`. Spaces: see
    :mod:`envs.observation` and :mod:`envs.action`. ``info`` of a step holds the decided job's
    ``record`` (:class:`placer.types.JobRecord`). Seed only through ``reset(seed=...)``.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: EnvConfig | None = None, **kwargs: Any) -> None:
        self.config = config = replace(config or EnvConfig(), **kwargs)
        if config.reward not in REWARDS:
            raise PlacerError(f"unknown reward {config.reward!r} (choose from {', '.join(REWARDS)})")
        if not config.clusters:
            raise PlacerError("the environment needs at least one cluster")
        clusters = (config.clusters,) if isinstance(config.clusters, str) else config.clusters
        self.costs = [CostModel(load_cluster(c), strategy=config.strategy) for c in clusters]
        self.cost = self.costs[0]
        self.graphs = [resolve_graph(g) for g in config.graphs]
        self.betas = [BetaDistribution(b) for b in config.beta_dists]
        self._static = {g.key: graph_arrays(g, config.max_nodes, config.max_edges) for g in self.graphs}
        self.num_options = config.max_degree * len(config.rules)
        self.observation_space = observation_space(config.max_nodes, config.max_edges, self.num_options, config.max_devices)
        self.action_space = gym.spaces.Discrete(act.num_actions(config.max_degree, len(config.rules)))
        self._mean_seq = float(np.mean([self.cost.sequential_jct_s(g) for g in self.graphs]))  # reward scale
        self.sim: Simulator | None = None
        self.job: Job | None = None
        self._table: list = []

    # -- gymnasium API ----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        self.cost = self.costs[int(rng.integers(len(self.costs)))] if len(self.costs) > 1 else self.costs[0]
        beta = self.betas[int(rng.integers(len(self.betas)))]
        devices = self.cost.cluster.num_devices
        workload = Workload(
            self.graphs,
            beta,
            self.config.load,
            devices,
            self.config.episode_jobs,
            self.config.arrival,
            None,
            self.cost.sequential_iteration_s,
        )
        self.sim = Simulator(self.cost, list(workload.jobs(rng)))
        self.job = self.sim.next_job()
        return self._observe(), {"beta_dist": beta.spec, "cluster": self.cost.cluster.name}

    def step(self, action):
        if self.sim is None or self.job is None:
            raise RuntimeError("call reset() before step()")
        record = self.sim.decide(act.decision(int(action), self._table))
        r = reward(self.config.reward, record, self._mean_seq)
        self.job = self.sim.next_job()
        terminated = self.job is None
        obs = self._observe() if not terminated else {k: v.copy() for k, v in self._last_obs.items()}
        return obs, r, terminated, False, {"record": record}

    def action_masks(self) -> np.ndarray:
        """(num_actions,) bool: reject and exactly the feasible (degree, rule) choices."""
        return act.action_mask(self._table, self.config.max_degree, len(self.config.rules))

    # -- internals --------------------------------------------------------------------
    def _observe(self) -> dict[str, np.ndarray]:
        job, view = self.job, self.sim.view()
        self._table = act.option_table(job, view, self.config.max_degree, self.config.rules)
        static = self._static.get(job.graph.key) or graph_arrays(job.graph, self.config.max_nodes, self.config.max_edges)
        dynamic = dynamic_arrays(job, view, self._table, self.config.max_degree, self.config.max_devices, static["num_forward_ops"])
        obs = {k: v.copy() for k, v in static.items() if k != "num_forward_ops"} | dynamic
        self._last_obs = obs
        return obs
