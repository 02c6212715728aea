"""What an evaluation runs: the cluster, graphs, workload, queue and policies (saved beside its results)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from placer.baselines.specs import PolicySpec
from placer.cost import STRATEGIES
from placer.sim.options import DEFAULT_MAX_DEGREE
from placer.sim.queueing import QueueConfig
from placer.workloads.generator import BetaDistribution, SizeDistribution
from placer.workloads.structure import Structure


class EvaluationConfig(BaseModel):
    """Everything that determines an evaluation's results (saved beside them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    cluster: str
    graphs: list[str] = Field(default_factory=list)
    graphs_dir: str | None = None
    beta_dists: list[str] = Field(min_length=1)
    load: float = Field(gt=0)
    jobs: int = Field(ge=1)
    seeds: int = Field(ge=1)
    first_seed: int = Field(default=0, ge=0)  # seeds first_seed .. first_seed + seeds - 1 (validation streams start at 10,000)
    policies: list[str] = Field(min_length=1)
    arrival: str = "poisson"
    trace: str | None = None
    iterations: int | None = Field(default=None, ge=1)
    max_degree: int = Field(default=DEFAULT_MAX_DEGREE, ge=1)
    policy_file: str | None = None
    strategy: str = "auto"
    queue: str = "none"
    size: str = "const"
    structure: str = "iid"

    @field_validator("structure")
    @classmethod
    def _valid_structure(cls, value: str) -> str:
        Structure(value)
        return value

    @field_validator("queue")
    @classmethod
    def _valid_queue(cls, value: str) -> str:
        QueueConfig.parse(value)
        return value

    @field_validator("size")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        SizeDistribution(value)
        return value

    @field_validator("policies")
    @classmethod
    def _valid_policies(cls, value: list[str]) -> list[str]:
        for spec in value:
            PolicySpec.parse(spec)  # a plug-in checks its own arguments when the runner builds it
        return value

    @field_validator("strategy")
    @classmethod
    def _valid_strategy(cls, value: str) -> str:
        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r} (choose from {', '.join(STRATEGIES)})")
        return value

    @field_validator("beta_dists")
    @classmethod
    def _valid_betas(cls, value: list[str]) -> list[str]:
        for spec in value:
            if spec != "trace":
                BetaDistribution(spec)
        return value


def total_decisions(config: EvaluationConfig) -> int:
    """Jobs an evaluation decides (without a trace, whose length is known only once read)."""
    return config.jobs * len(config.beta_dists) * config.seeds * len(config.policies)
