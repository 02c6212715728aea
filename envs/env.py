"""The Gymnasium environment: one step = one arriving job (a thin adapter over the simulator)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs import action as act
from envs.config import EnvConfig
from envs.observation import JobHistory, dynamic_arrays, graph_arrays, observation_space
from envs.reward import reward
from placer.cluster.topology import load_cluster
from placer.common.errors import PlacerError
from placer.cost import CostModel
from placer.graphs.catalog import resolve_graph
from placer.sim.simulator import Simulator
from placer.sim.types import Job, Reject


class ClusterPlacementEnv(gym.Env):
    """Pick a partitioning degree and a placement for each arriving job.

    Keyword arguments are the fields of :class:`envs.config.EnvConfig`. Spaces: see
    :mod:`envs.observation` and :mod:`envs.action`. With a queue one step is one offer of a waiting
    job (action 0 holds it). Offers with nothing feasible are rejected (held) without a step: every
    step is a real choice. The reward sums over every job settled since the last step (started,
    or blocked: rejected, expired, queue full). ``info`` of a step holds the offered job's
    ``record`` (:class:`placer.sim.types.JobRecord`, None when held) and ``settled`` (the records
    behind the reward). Seed only through ``reset(seed=...)``.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: EnvConfig | None = None, **kwargs: Any) -> None:
        self.config = config = (config or EnvConfig()).with_changes(**kwargs) if kwargs else (config or EnvConfig())
        self.costs = [CostModel(load_cluster(c), strategy=config.strategy) for c in config.clusters]
        self.cost = self.costs[0]
        workload = config.workload
        self.graphs = [resolve_graph(g) for g in workload.graphs]
        self.betas, self.queues, self.sizes, self.structures = workload.betas, workload.queues, workload.sizes, workload.structures
        self._static = {g.key: graph_arrays(g, config.max_nodes, config.max_edges) for g in self.graphs}
        self.num_options = config.max_degree * len(config.rules)
        self.observation_space = observation_space(config.max_nodes, config.max_edges, self.num_options, config.max_groups, config.history)
        self.action_space = gym.spaces.Discrete(act.num_actions(config.max_degree, len(config.rules)))
        self._mean_seq = float(np.mean([self.cost.sequential_jct_s(g) for g in self.graphs]))  # reward scale
        self.sim: Simulator | None = None
        self.stream: tuple = ()
        self.job: Job | None = None
        self._table: list = []
        self._history = JobHistory()

    # -- gymnasium API ----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        self.cost = self.costs[int(rng.integers(len(self.costs)))] if len(self.costs) > 1 else self.costs[0]
        beta = self.betas[int(rng.integers(len(self.betas)))]
        queue = self.queues[int(rng.integers(len(self.queues)))] if len(self.queues) > 1 else self.queues[0]
        size = self.sizes[int(rng.integers(len(self.sizes)))] if len(self.sizes) > 1 else self.sizes[0]
        structure = self.structures[int(rng.integers(len(self.structures)))] if len(self.structures) > 1 else self.structures[0]
        devices = self.cost.cluster.num_devices
        workload = self.config.workload.stream(self.graphs, beta, devices, self.cost.sequential_iteration_s, size, structure)
        self.stream = tuple(workload.jobs(rng))  # the episode's jobs: for a clairvoyant teacher, never observed
        self.sim = Simulator(self.cost, self.stream, queue=queue)
        self._history = JobHistory()
        self._settled = 0
        self.job = self._next_choice()
        if self.job is None:
            raise PlacerError("no job of the episode had a feasible choice (raise the load or loosen the deadlines)")
        return self._observe(), {
            "beta_dist": beta.spec,
            "cluster": self.cost.cluster.name,
            "queue": queue.spec,
            "size": size.spec,
            "structure": structure.spec,
        }

    def step(self, action):
        if self.sim is None or self.job is None:
            raise RuntimeError("call reset() before step()")
        record = self.sim.decide(act.decision(int(action), self._table))
        self.job = self._next_choice()
        terminated = self.job is None
        if terminated:
            self.sim.run()
        settled = self.sim.records[self._settled :]  # every job decided for good since the last step
        self._settled = len(self.sim.records)
        r = sum(reward(self.config.reward, done, self._mean_seq) for done in settled)
        obs = self._observe() if not terminated else {k: v.copy() for k, v in self._last_obs.items()}
        return obs, float(r), terminated, False, {"record": record, "settled": settled}

    def action_masks(self) -> np.ndarray:
        """(num_actions,) bool: reject and exactly the feasible (degree, rule) choices."""
        return act.action_mask(self._table, self.config.max_degree, len(self.config.rules))

    # -- internals --------------------------------------------------------------------
    def _next_choice(self) -> Job | None:
        """The next offered job with a feasible option; offers with none are rejected or held without a step."""
        while (job := self.sim.next_job()) is not None:
            self._history.observe(job)
            self._table = act.option_table(job, self.sim.view(), self.config.max_degree, self.config.rules)
            if any(option.feasible for option in self._table):
                return job
            self.sim.decide(Reject())
        return None

    def _observe(self) -> dict[str, np.ndarray]:
        job, view = self.job, self.sim.view()
        static = self._static.get(job.graph.key) or graph_arrays(job.graph, self.config.max_nodes, self.config.max_edges)
        dynamic = dynamic_arrays(
            job,
            view,
            self._table,
            self.config.max_degree,
            self.config.max_groups,
            static["num_forward_ops"],
            self._history,
            self.config.history,
        )
        obs = {k: v.copy() for k, v in static.items() if k != "num_forward_ops"} | dynamic
        self._last_obs = obs
        return obs
