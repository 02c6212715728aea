"""What an evaluation runs: the cluster, graphs, workload, queue and policies (saved beside its results)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from placer.baselines.policy import TUNING_SEED
from placer.baselines.specs import PolicySpec, check_label
from placer.common.errors import PolicyError
from placer.cost import STRATEGIES
from placer.sim.options import DEFAULT_MAX_DEGREE
from placer.sim.workload import WorkloadSpec, nest_workload
from placer.workloads.generator import MAX_LOAD, load_problem

VALIDATION_SEED = 10_000  # a training's validation stream k of beta distribution i: np.random.default_rng([VALIDATION_SEED + k, i])


class EvaluationConfig(BaseModel):
    """Everything that determines an evaluation's results (saved beside them).

    The workload's fields may also be given flat (``EvaluationConfig(cluster=..., load=0.9, ...)``), as
    results files written before the workload was nested have them.

    ``policies`` are the names the results use: a policy's spec, or its label where one is given
    (``learned=mine:runs/a/policy.pt`` is kept as ``mine``, with ``labels["mine"] = "learned:runs/a/policy.pt"``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    cluster: str
    workload: WorkloadSpec
    graphs_dir: str | None = None
    seeds: int = Field(ge=1)
    first_seed: int = Field(default=0, ge=0)  # seeds first_seed .. first_seed + seeds - 1 (validation streams start at VALIDATION_SEED)
    policies: list[str] = Field(min_length=1)
    trace: str | None = None
    tune_trace: str | None = Field(
        default=None, description="a replayed trace apart from ``trace`` (another window of the same source) to tune best, adaptive, ... on"
    )
    max_degree: int = Field(default=DEFAULT_MAX_DEGREE, ge=1)
    policy_file: str | None = None
    strategy: str = "auto"
    loads: tuple[float, ...] = Field(default=(), description="the offered loads to evaluate, each a run of the workload at that load")
    labels: dict[str, str] = Field(default_factory=dict, description="label -> the policy it names (its spec, unlabelled)")

    @field_validator("loads")
    @classmethod
    def _valid_loads(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(load_problem(load) for load in value) or len(set(value)) != len(value):
            raise ValueError(f"loads must be distinct positive numbers below {MAX_LOAD:g}, got {', '.join(map(str, value))}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _nest_workload(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("trace") and data.get("beta_dists") == ["trace"]:
            data = {k: v for k, v in data.items() if k != "beta_dists"}  # a replayed trace carries its own deadlines
        return nest_workload(data)

    @model_validator(mode="before")
    @classmethod
    def _split_labels(cls, data: Any) -> Any:
        """``learned=mine:PATH`` in ``policies`` -> ``mine`` there and in ``labels``, as a results file keeps it."""
        if not isinstance(data, dict) or not isinstance(data.get("policies"), list | tuple):
            return data
        names, labels = [], dict(data.get("labels") or {})
        for text in data["policies"]:
            spec = PolicySpec.parse(text) if isinstance(text, str) and "=" in text.partition(":")[0] else None
            if spec is not None and spec.label is not None:
                if spec.label in labels:
                    raise PolicyError(f"label {spec.label!r} is given twice: one label per policy")
                labels[spec.label] = str(spec.unlabelled)
            names.append(spec.name if spec is not None else text)
        return data | {"policies": names, "labels": labels}

    @model_validator(mode="after")
    def _loads_need_streams(self) -> EvaluationConfig:
        if self.trace and len(self.loads) > 1:
            raise ValueError("a replayed --trace has its own arrival times: it takes no list of loads")
        if self.tune_trace and not self.trace:
            raise ValueError("--tune-trace tunes policies for a replayed --trace: give the --trace too")
        if self.tune_trace and self.trace and Path(self.tune_trace).resolve() == Path(self.trace).resolve():
            raise ValueError("--tune-trace is the evaluated --trace: tune on another window of it (placer import trace --start)")
        if self.first_seed + self.seeds > TUNING_SEED:
            raise ValueError(f"seeds from {TUNING_SEED:,} draw the tuning streams: first_seed + seeds must stay below")
        return self

    @field_validator("workload")
    @classmethod
    def _one_setting(cls, value: WorkloadSpec) -> WorkloadSpec:
        value.single()
        return value

    @model_validator(mode="after")
    def _valid_policies(self) -> EvaluationConfig:
        for name in self.policies:
            PolicySpec.parse(self.spec_of(name))  # a plug-in checks its own arguments when the runner builds it
        if len(set(self.policies)) < len(self.policies):
            twice = sorted({name for name in self.policies if self.policies.count(name) > 1})
            raise PolicyError(f"policy {twice[0]!r} is named twice: label one (learned=mine:PATH.pt)")
        for label, spec in self.labels.items():
            check_label(label, str(PolicySpec.parse(spec).replace(label=label)))
            if label not in self.policies:
                raise PolicyError(f"label {label!r} names no evaluated policy")
        return self

    def spec_of(self, name: str) -> str:
        """The policy an evaluated name stands for: its spec (unlabelled), ``labels``' for a label."""
        return self.labels.get(name, name)

    @field_validator("strategy")
    @classmethod
    def _valid_strategy(cls, value: str) -> str:
        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r} (choose from {', '.join(STRATEGIES)})")
        return value

    @property
    def load_values(self) -> tuple[float, ...]:
        """The loads evaluated: ``loads``, or the workload's one load when none are given."""
        return self.loads or (self.workload.load,)

    def workload_at(self, load_index: int) -> WorkloadSpec:
        """The workload at the ``load_index``-th load (the same streams as an evaluation of that load alone)."""
        load = self.load_values[load_index]
        return self.workload if load == self.workload.load else self.workload.model_copy(update={"load": load})  # loads are checked

    @property
    def run_loads(self) -> tuple[float | None, ...]:
        """The ``load`` each load's runs record (in ``results.json``, ``summary.csv``, ``jobs.csv``): :attr:`load_values`,
        or ``(None,)`` for a replayed trace, whose arrival times set its load: no load was set, none is recorded (null in
        JSON, an empty cell in CSV). Results written before recorded the workload's unused default, 0.9;
        :func:`~placer.evaluate.results.read_results` reads those as None."""
        return (None,) if self.trace else self.load_values

    @property
    def beta_labels(self) -> tuple[str, ...]:
        """The runs' ``beta_dist`` labels: the workload's distributions, or ``trace`` for a replayed trace."""
        return ("trace",) if self.trace else self.workload.beta_dists


def total_decisions(config: EvaluationConfig) -> int:
    """Jobs an evaluation decides (without a trace, whose length is known only once read)."""
    return config.workload.jobs * len(config.beta_labels) * config.seeds * len(config.policies) * len(config.load_values)


def load_label(load: float | None) -> str:
    """A run's recorded ``load`` as a table shows it: the number, or ``trace`` for a replayed trace's (None)."""
    return "trace" if load is None else str(load)
