"""Typed configuration of the placement environment (read once, at the edge)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from envs.regime import parse_table
from envs.reward import REWARDS
from placer.baselines.specs import PolicySpec
from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import EnvConfigError
from placer.sim.workload import WorkloadSpec, nest_workload

SETTING_FIELDS = ("clusters", "loads", "load", "graphs", "beta_dists", "queue", "size", "structure", "arrival", "jobs")  # its keys
Names = Annotated[tuple[str, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v)]


class EnvConfig(BaseModel):
    """Keyword arguments of :class:`envs.env.ClusterPlacementEnv` (and the ``[env]`` section of a training config).

    clusters: preset names or TOML paths (or one name); each episode draws one uniformly (one policy for several
    clusters). workload: the job streams (:class:`placer.sim.workload.WorkloadSpec`: graphs, beta distributions,
    load, arrivals, jobs per episode, size spread, structure, queue); each episode draws one of its beta
    distributions, sizes, structures and queues. Its fields may be given flat (``EnvConfig(load=0.9)``,
    ``gymnasium.make(..., queue="edf-bf")``); ``episode_jobs`` is the older name of ``jobs``.
    max_degree: largest partitioning degree; rules: the placement choices the policy picks from (rules of
    :data:`placer.cluster.placement.PLACEMENT_RULES`, in their order there).
    reward: ``acceptance`` (+1/-1 per job, PAC-ML's), ``work`` (+/- the job's sequential
    JCT over the mix's mean: throughput-aware) or ``mission`` (0 for jobs no policy can accept, -1 per
    avoidable job blocked, 0.9-1 per accepted job by how close it finished to the fastest possible;
    :mod:`envs.reward`).
    strategy: the cost model's (``auto``: fastest data x tensor x pipeline split; ``sipml``: PAC-ML's
    op splitting; see :mod:`placer.cost`).
    history: add the ``history`` observation (:mod:`envs.observation`: arrival rates, recurrence).
    meter: add the ``meter`` observation (the offered load measured from the arrivals, as ``adaptive`` reads it).
    advisers: heuristics (policy names whose name alone decides what they do) put every offer beside the policy; the
    observation says what each would do (:mod:`envs.advice`: one ``options`` column each, and the ``advice`` holds).
    baseline: a heuristic (policy name), or a table of regime (:attr:`envs.regime.Regime.key`) -> heuristic, also run on
    each episode's stream; the reward is shaped by the potential of its rewards on the arrivals still to come, so the
    return from a state is the plain one less what the heuristic would earn from there on the same arrivals (an
    input-dependent baseline for PPO, :mod:`envs.baseline`); None: the plain reward. baseline_discount: the discount per
    step the shaping telescopes under (PPO's ``gamma``; training sets it). baseline_arrival_discount: the potential's
    discount per arrival (any value keeps the policy gradient unbiased; the variance is least when the potential tracks
    the discounted return, about ``baseline_discount`` to the power of the steps per arrival; None: ``baseline_discount``).
    loads: offered loads an episode draws from (one per episode, uniformly; a curriculum over loads); empty:
    the workload's ``load``.
    settings: variants of this config an episode draws from (one per episode, uniformly, then its regime within it), each
    a table of the fields that say what an episode draws (:data:`SETTING_FIELDS`; its graphs a subset of this config's)
    replacing this config's; e.g. ``({}, {"clusters": "pacml", "queue": "none", "size": "const", "loads": [0.9]})``
    trains on this config's regimes and on PAC-ML's loss setting without the regimes between them. Empty: this config
    alone (:attr:`variants`).
    elastic: running jobs may be resized, and the policy decides it (:mod:`envs.resize`): after completions, while no job
    waits, up to ``resize_offers`` running jobs are offered a new degree and placement, one step each, the observation
    with the ``resize`` features; the simulator runs elastic (:mod:`placer.sim.elastic`). Advisers do not resize: at a resize offer their
    columns and holds read 0.
    max_nodes / max_edges: padding limits of the graph part (forward ops and forward edges); a
    graph over a limit is an error, never truncated. max_groups: rows of the cluster part (any
    cluster fits: servers are grouped beyond it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    clusters: Names = Field(("pacml",), min_length=1)
    workload: WorkloadSpec = WorkloadSpec()
    max_degree: int = Field(16, ge=1)
    rules: Names = tuple(PLACEMENT_RULES)
    reward: str = "acceptance"
    strategy: str = "auto"
    history: bool = False
    meter: bool = False
    advisers: Names = ()
    loads: tuple[Annotated[float, Field(gt=0, allow_inf_nan=False)], ...] = ()
    baseline: str | dict[str, str] | None = None
    baseline_discount: float = Field(0.99, gt=0, le=1)
    baseline_arrival_discount: float | None = Field(None, gt=0, le=1)
    max_nodes: int = Field(512, ge=1, le=100_000)  # padding sizes: bounded so a typo cannot fill memory
    max_edges: int = Field(1024, ge=1, le=1_000_000)
    max_groups: int = Field(64, ge=1, le=100_000)
    settings: tuple[dict[str, Any], ...] = ()
    elastic: bool = False
    resize_offers: int = Field(1, ge=1, le=64)

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
