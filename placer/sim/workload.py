"""What job streams look like, said once: :class:`WorkloadSpec`, nested in the environment's, the
training's and the evaluation's configs. Its field descriptions are the CLI's help texts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from placer.graphs.catalog import PACML_GRAPHS
from placer.graphs.job_graph import JobGraph
from placer.sim.queueing import QueueConfig
from placer.workloads.generator import MAX_LOAD, BetaDistribution, SizeDistribution, Workload
from placer.workloads.structure import Structure

SPEC_PARSERS: dict[str, Callable[[str], object]] = {
    "beta_dists": BetaDistribution,
    "size": SizeDistribution,
    "structure": Structure,
    "queue": QueueConfig.parse,
}  # the parser of each field of specs
WORKLOAD_FIELDS = ("graphs", "beta_dists", "load", "arrival", "jobs", "size", "structure", "queue", "iterations")


def nest_workload(data: Any, aliases: dict[str, str] | None = None) -> Any:
    """A config's input with the workload's fields given flat (``load=0.9``) moved into its ``workload``.

    For configs that nest a :class:`WorkloadSpec` (a ``mode="before"`` validator): keyword arguments,
    TOML sections and files written before the workload was nested stay valid. ``aliases`` maps older
    names to the workload's (``episode_jobs`` -> ``jobs``).
    """
    if not isinstance(data, dict):
        return data
    names: dict[str, str | None] = {**dict.fromkeys(WORKLOAD_FIELDS), **(aliases or {})}
    flat = {names[key] or key: data[key] for key in data if key in names}
    if not flat:
        return data
    rest = {key: value for key, value in data.items() if key not in names}
    nested = rest.get("workload", {})
    nested = nested.model_dump() if isinstance(nested, WorkloadSpec) else dict(nested)
    return {**rest, "workload": {**nested, **flat}}


def _several(value: object) -> object:
    """One spec or several: ``"edf-bf"`` -> ``("edf-bf",)``; ``"A,B"`` stays one string (split at the CLI)."""
    return (value,) if isinstance(value, str) else value


Specs = Annotated[tuple[str, ...], BeforeValidator(_several)]


class WorkloadSpec(BaseModel):
    """A family of job streams. ``size``, ``structure`` and ``queue`` take one spec or several: an
    environment draws one per episode, a validation runs each, an evaluation takes exactly one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    graphs: Specs = Field(PACML_GRAPHS, description="graph names or JSON paths")
    beta_dists: Specs = Field(("A", "B", "C", "D"), min_length=1, description="deadline distributions: A, B, C, D, uniform:LO:HI, const:B")
    load: float = Field(0.9, gt=0, lt=MAX_LOAD, allow_inf_nan=False, description="offered load (arrived work / cluster capacity)")
    arrival: Literal["poisson", "fixed"] = Field("poisson", description="arrival process: poisson or fixed")
    jobs: int = Field(256, ge=1, description="arrivals per stream")
    size: Specs = Field(("const",), min_length=1, description="job length spread: const, or loguniform:LO:HI (iterations x a factor)")
    structure: Specs = Field(
        ("iid",),
        min_length=1,
        description=(
            "stream structure: iid, or daily, sweeps, recurring, replay:philly or replay:FILE.csv (:part=train its first two "
            "thirds by time, :part=held its last third), several joined by + (daily+sweeps)"
        ),
    )
    queue: Specs = Field(
        ("none",), min_length=1, description="waiting queue: none (loss system), fifo, edf, sjf, optionally -bf and :CAPACITY"
    )
    iterations: int | None = Field(None, ge=1, description="override every graph's iteration count")

    @field_validator("beta_dists", "size", "structure", "queue")
    @classmethod
    def _valid_specs(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        """Each spec parsed once to check it: a bad one raises its parser's one-line error (a ``PlacerError``)."""
        parse = SPEC_PARSERS[str(info.field_name)]
        for spec in value:
            parse(spec)
        return value

    @cached_property
    def betas(self) -> tuple[BetaDistribution, ...]:
        return tuple(map(BetaDistribution, self.beta_dists))

    @cached_property
    def sizes(self) -> tuple[SizeDistribution, ...]:
        return tuple(map(SizeDistribution, self.size))

    @cached_property
    def structures(self) -> tuple[Structure, ...]:
        return tuple(map(Structure, self.structure))

    @cached_property
    def queues(self) -> tuple[QueueConfig, ...]:
        return tuple(map(QueueConfig.parse, self.queue))

    def stream(
        self,
        graphs: Sequence[JobGraph],
        beta: BetaDistribution,
        num_devices: int,
        sequential_iteration_s: Callable[[JobGraph], float] | None = None,
        size: SizeDistribution | None = None,
        structure: Structure | None = None,
        load: float | None = None,
    ) -> Workload:
        """The job stream of one beta distribution (and one size and structure, default the first; at offered ``load``,
        default :attr:`load`) on ``num_devices`` devices."""
        return Workload(
            graphs,
            beta,
            self.load if load is None else load,
            num_devices,
            self.jobs,
            arrival=self.arrival,
            iterations=self.iterations,
            sequential_iteration_s=sequential_iteration_s,
            size=size or self.sizes[0],
            structure=structure or self.structures[0],
        )

    def single(self) -> WorkloadSpec:
        """This spec, checked to name exactly one size, structure and queue (what one evaluation runs)."""
        for name in ("size", "structure", "queue"):
            if len(getattr(self, name)) != 1:
                raise ValueError(f"an evaluation runs one {name}, got {', '.join(getattr(self, name))}")
        return self
