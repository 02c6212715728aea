"""Typed configuration of the placement environment (read once, at the edge)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from placer.baselines.specs import PolicySpec
from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import EnvConfigError
from placer.cost import STRATEGIES
from placer.envs.regime import parse_table
from placer.envs.reward import REWARDS
from placer.sim.workload import WorkloadSpec, nest_workload

SETTING_FIELDS = ("clusters", "loads", "load", "graphs", "beta_dists", "queue", "size", "structure", "arrival", "jobs")  # its keys
Names = Annotated[tuple[str, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v)]


class EnvConfig(BaseModel):
    """Keyword arguments of :class:`placer.envs.env.ClusterPlacementEnv` (and the ``[env]`` section of a training config), each
    field's meaning in its description (``placer train --keys`` prints them). The workload's fields may be given flat
    (``EnvConfig(load=0.9)``, ``gymnasium.make(..., queue="edf-bf")``); ``episode_jobs`` is the older name of ``jobs``.

    Rewards: :mod:`placer.envs.reward`. With a ``baseline`` the reward is shaped by the
    potential of the heuristic's rewards on the arrivals still to come, so the return from a state is the plain one less
    what the heuristic would earn from there on the same arrivals (an input-dependent baseline for PPO,
    :mod:`placer.envs.baseline`); any ``baseline_arrival_discount`` keeps the policy gradient unbiased, and the variance is
    least when the potential tracks the discounted return (about ``baseline_discount`` to the power of the steps per
    arrival). A setting, e.g. ``{"clusters": "pacml", "queue": "none", "size": "const", "loads": [0.9]}``, replaces this
    config's fields of :data:`SETTING_FIELDS` (its graphs a subset of this config's): ``({}, that)`` trains on this
    config's regimes and on PAC-ML's loss setting without the regimes between them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    clusters: Names = Field(
        ("pacml",), min_length=1, description="preset names or cluster files; each episode draws one (one policy for several clusters)"
    )
    workload: WorkloadSpec = Field(
        WorkloadSpec(),
        description="the job streams ([env.workload]); each episode draws one of its beta distributions, sizes, structures and queues",
    )
    max_degree: int = Field(16, ge=1, description="the largest partitioning degree")
    rules: Names = Field(tuple(PLACEMENT_RULES), description="the placement rules the policy picks from (first_fit, best_fit, spread)")
    reward: str = Field(
        "acceptance",
        description="acceptance (+1/-1 a job, PAC-ML's), work (+/- its sequential JCT over the mix's mean) or mission (0 for a job"
        " no policy can accept, -1 for an avoidable one blocked, 0.9-1 for an accepted one by how close it came to its fastest JCT)",
    )
    strategy: str = Field(
        "auto",
        description="the cost model's (placer.cost): auto (the fastest data x tensor x pipeline split), dp, tp, pp or sipml (PAC-ML's)",
    )
    history: bool = Field(False, description="add the history observation (arrival rates, recurrence: placer.envs.observation)")
    meter: bool = Field(False, description="add the meter observation (the offered load measured from the arrivals, as adaptive reads it)")
    advisers: Names = Field(
        (), description="heuristics whose decision at every offer the observation shows beside the options (placer.envs.advice)"
    )
    loads: tuple[Annotated[float, Field(gt=0, allow_inf_nan=False)], ...] = Field(
        (), description="offered loads an episode draws from (one per episode); empty: the workload's load"
    )
    baseline: str | dict[str, str] | None = Field(
        None, description="a heuristic, or a table of regime -> heuristic, whose rewards on the same arrivals shape the reward"
    )
    baseline_discount: float = Field(
        0.99, gt=0, le=1, description="the discount per step the baseline's shaping telescopes under (training sets PPO's gamma)"
    )
    baseline_arrival_discount: float | None = Field(
        None, gt=0, le=1, description="the baseline potential's discount per arrival; none: baseline_discount"
    )
    max_nodes: int = Field(
        512, ge=1, le=100_000, description="padding of the graph part, forward ops (a larger graph is an error, never truncated)"
    )
    max_edges: int = Field(1024, ge=1, le=1_000_000, description="padding of the graph part, forward edges")
    max_groups: int = Field(64, ge=1, le=100_000, description="rows of the cluster part (servers are grouped beyond it)")
    settings: tuple[dict[str, Any], ...] = Field(
        (),
        description="variants an episode draws from, each a table of clusters, loads, graphs, beta_dists, queue, size, structure,"
        " arrival or jobs replacing this config's",
    )
    elastic: bool = Field(
        False,
        description="running jobs may be resized and the policy decides it, one offer per step (placer.envs.resize); advisers read 0 there",
    )
    resize_offers: int = Field(1, ge=1, le=64, description="elastic: running jobs offered a resize after completions, while no job waits")

    @model_validator(mode="before")
    @classmethod
    def _nest_workload(cls, data: Any) -> Any:
        data = nest_workload(data, {"episode_jobs": "jobs"})
        if isinstance(data, dict) and data.get("reward", "acceptance") not in REWARDS:
            raise EnvConfigError(f"unknown reward {data['reward']!r} (choose from {', '.join(REWARDS)})")
        baseline = data.get("baseline") if isinstance(data, dict) else None
        if isinstance(baseline, dict) and not baseline:
            raise EnvConfigError("baseline: the table names no regime (give a heuristic, a table of regime -> heuristic, or none)")
        _check_names("baseline", [baseline] if isinstance(baseline, str) else baseline.values() if isinstance(baseline, dict) else [])
        if isinstance(baseline, dict):
            parse_table(baseline, "baseline")  # every key a regime, written as Regime.key writes it: one line now, not at a reset
        advisers = data.get("advisers", ()) if isinstance(data, dict) else ()
        if not isinstance(advisers, str | list | tuple):
            raise EnvConfigError(f"advisers: {advisers!r} is not a list of heuristics' names")
        _check_names("advisers", [advisers] if isinstance(advisers, str) else advisers)
        settings = data.get("settings") or () if isinstance(data, dict) else ()
        if not isinstance(settings, list | tuple):
            raise EnvConfigError(f"settings: {settings!r} is not a list of tables (one per setting)")
        for setting in settings:
            _check_setting(setting)
        return data

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        if unknown := [rule for rule in rules if rule not in PLACEMENT_RULES]:
            raise EnvConfigError(f"rules: unknown placement rule {unknown[0]!r} (rules: {', '.join(PLACEMENT_RULES)})")
        return rules

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, strategy: str) -> str:
        if strategy not in STRATEGIES:  # one line when the config is read, not when an environment builds its cost model
            raise EnvConfigError(f"strategy: unknown cost-model strategy {strategy!r} (strategies: {', '.join(STRATEGIES)})")
        return strategy

    @model_validator(mode="after")
    def _valid_settings(self) -> EnvConfig:
        for variant in self.variants:  # each setting validated once, here: a bad value is one line when the config is read
            if unknown := [g for g in variant.workload.graphs if g not in self.workload.graphs]:
                raise EnvConfigError(
                    f"settings: graph {unknown[0]!r} is not one of [env.workload] graphs (observations name a graph by its place there)"
                )
        return self

    @property
    def variants(self) -> tuple[EnvConfig, ...]:
        """The configs an episode draws from: this one, or one per setting (this config with the setting's fields)."""
        if not self.settings:
            return (self,)
        return tuple(_variant(self, setting) for setting in self.settings)

    @property
    def all_clusters(self) -> tuple[str, ...]:
        """Every cluster an episode may draw (of every variant, each once, in order of first appearance)."""
        return tuple(dict.fromkeys(c for variant in self.variants for c in variant.clusters))

    @property
    def load_values(self) -> tuple[float, ...]:
        """The offered loads episodes draw from."""
        return self.loads or (self.workload.load,)

    def with_changes(self, **changes: Any) -> EnvConfig:
        """A copy with ``changes`` applied (workload fields may be given flat), validated."""
        return EnvConfig.model_validate({**self.model_dump(), **changes})


def _check_names(field: str, names: Any) -> None:
    """One line for an entry of ``field`` that is not a policy name the registry parses (at the edge, when the config is read)."""
    for name in names:
        if not isinstance(name, str):
            raise EnvConfigError(f"{field}: {name!r} is not a heuristic's name")
        PolicySpec.parse(name)


def _check_setting(setting: Any) -> None:
    """One line for a setting that is not a table of :data:`SETTING_FIELDS`."""
    if not isinstance(setting, dict):
        raise EnvConfigError(f"settings: {setting!r} is not a table of fields")
    unknown = sorted(set(setting) - set(SETTING_FIELDS))
    if unknown:
        raise EnvConfigError(f"settings: {', '.join(unknown)} cannot vary by setting (a setting sets {', '.join(SETTING_FIELDS)})")


def _variant(config: EnvConfig, setting: dict[str, Any]) -> EnvConfig:
    """``config`` with one setting's fields (it has no settings of its own)."""
    try:
        return config.with_changes(**setting, settings=())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise EnvConfigError(f"settings: {setting!r}: {where}: {first['msg']}") from None
