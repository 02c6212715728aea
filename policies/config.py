"""Training configuration (TOML, validated with pydantic)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.baselines.specs import PolicySpec
from placer.common.errors import ConfigError
from placer.common.tomlfile import load_toml, read_toml
from placer.envs.config import EnvConfig

REGIME_TEACHERS = ("best", "elastic-best")  # teachers tuned per regime (placer.policies.teachers)


def tuned_per_regime(teacher: str) -> bool:
    """Whether the teacher ``teacher`` is tuned per regime (needs :func:`placer.policies.teachers.regime_members`' table)."""
    return PolicySpec.parse(teacher, plugins={}).kind in REGIME_TEACHERS


def _d(default: Any, description: str, **constraints: Any) -> Any:
    """A field with its default, its description (``placer train --keys`` prints it) and pydantic's constraints."""
    return Field(default, description=description, **constraints)


class PPOSection(BaseModel):
    """``[ppo]``: stable-baselines3's MaskablePPO (sb3-contrib), with the anchor to the starting policy added."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    n_envs: int = _d(4, "environments stepped per rollout", ge=1)
    vec_env: Literal["dummy", "subproc"] = _d("dummy", "dummy: the environments in this process; subproc: one process each (same rollouts)")
    n_steps: int = _d(256, "steps per environment per rollout", ge=8)
    batch_size: int = _d(256, "minibatch size of an update", ge=8)
    n_epochs: int = _d(4, "passes over a rollout per update", ge=1)
    learning_rate: float = _d(3e-4, "Adam's step size", gt=0)
    gamma: float = _d(0.99, "discount per step", gt=0, le=1)
    gae_lambda: float = _d(0.95, "GAE's lambda", gt=0, le=1)
    clip_range: float = _d(0.2, "PPO's clip range", gt=0)
    ent_coef: float = _d(0.01, "entropy bonus", ge=0)
    vf_coef: float = _d(0.5, "value loss weight", ge=0)
    detach_critic: bool = _d(False, "true: the value loss trains only the critic's own layers, not the layers the actor shares")
    anchor_kl: float = _d(0.0, "> 0: add this x KL(starting policy || policy) per decision to the loss (OptionPolicy.anchor_to)", ge=0)
    target_kl: float | None = _d(None, "stop an update's epochs once its approximate KL passes 1.5 x this (SB3); none: never", gt=0)


class PolicySection(BaseModel):
    """``[policy]``: the network (placer.policies.model: a GNN over the job's graph, an option scorer)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    hidden: int = _d(64, "width of the graph network's layers (bounded: a typo cannot allocate terabytes)", ge=4, le=8192)
    rounds: int = _d(3, "message-passing rounds over the job's graph", ge=1, le=64)
    net_arch: list[Annotated[int, Field(ge=1, le=65536)]] = _d([128], "the option scorer's hidden layers", max_length=16)


class TrainSection(BaseModel):
    """``[train]``: budgets, the warm start (imitation), its teacher, validation and checkpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    timesteps: int = _d(200_000, "PPO's environment steps; 0: the warm start (imitation) only", ge=0)
    seed: int = _d(0, "seeds the environments, the network's initialisation and PPO")
    checkpoint_every: int = _d(20_000, "steps between checkpoints (checkpoint.pt, for --resume)", ge=1)
    eval_every: int = _d(20_000, "steps between validations (eval.jsonl; the best validated kept as best.pt)", ge=1)
    eval_episodes: int = _d(2, "validation streams per regime", ge=1)
    validate_start: bool = _d(True, "validate the starting policy too (a warm start is then a candidate for best.pt)")
    torch_threads: int = _d(2, "torch's CPU threads", ge=1)
    baselines: list[str] = _d(["para_min", "para_min+best_fit", "lean"], "heuristics validated beside the policy")
    imitation_teacher: str = _d(
        "lean",
        "the policy cloned in the warm start; best: the member tuned for each episode's regime; elastic-best (an elastic"
        " [env]): the elastic families' member tuned for it, which also grows and shrinks running jobs",
    )
    teacher_pooled: list[Literal["cluster", "load", "beta_dist", "queue", "size", "structure"]] = _d(
        [], "best: regime fields whose values share one member (the student reads the load, not the beta distribution)"
    )
    teacher_candidates: list[str] = _d(
        [], "best: more candidate members (e.g. learned), scored beside every heuristic family on the same tuning streams"
    )
    teacher_margin: float = _d(
        0.0, "best: a candidate is the member only where it blocks this fraction fewer avoidable jobs than the families' best", ge=0, lt=1
    )
    teacher_resolved: bool = _d(
        False, "best: ...and only where its paired lead over the families' best on the tuning streams is resolved (95 % interval above 0)"
    )
    candidate_policy_file: str | None = _d(None, "best: the policy file a plain learned candidate runs (the recipe: its RL winner)")
    imitation_steps: int = _d(0, "decisions recorded for the warm start; 0: no warm start", ge=0)
    imitation_per_episode: int = _d(0, "record at most this many decisions of an episode (uniformly); 0: all", ge=0)
    record_replayed: bool = _d(
        True, "false: the warm start and DAgger record no replayed arrivals where the env has others (RL, tuning, validation see all)"
    )
    imitation_epochs: int = _d(5, "passes over the recorded decisions", ge=1)
    imitation_learning_rate: float = _d(1e-3, "the clone's step size", gt=0)
    imitation_workers: int = _d(1, "processes recording the teacher", ge=1)
    eval_workers: int = _d(1, "processes tuning best per regime and validating (the same figures for any count)", ge=1)
    ray: str | None = _d(None, "a Ray cluster (HOST:PORT) that tunes and validates instead of eval_workers processes (the same figures)")
    dagger_rounds: int = _d(0, "after cloning: rounds of (the learner drives, the teacher labels, clone again on all)", ge=0)
    dagger_steps: int = _d(10_000, "decisions recorded per DAgger round", ge=1)
    ppo_baseline: bool = _d(
        False, "PPO's reward less the teacher's on the same arrivals (placer.envs.baseline): an input-dependent baseline"
    )
    init_policy: str | None = _d(None, "start from this policy file's weights, not the warm start (a fixed one is widened for elastic)")
    clone_from_candidate: bool = _d(
        False,
        "the warm start clones into candidate_policy_file's weights, not fresh ones (advisers it did not read enter through"
        " zero weights), so where that candidate teaches, the student starts on its decisions",
    )
    imitation_temperature: float = _d(
        0.0,
        "> 0: fit the teacher's soft targets at this temperature: a planner's over its candidates' blocked jobs (jobs), a"
        " learned member's over its actions' log-probabilities (nats: 1 is its own distribution); a heuristic's stay one-hot",
        ge=0,
    )
    device: Literal["auto", "cpu", "cuda"] = _d("cpu", "PPO's network; auto: CUDA when present (the warm start runs on the CPU)")


class TrainConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    env: EnvConfig
    ppo: PPOSection = PPOSection()
    policy: PolicySection = PolicySection()
    train: TrainSection = TrainSection()

    @model_validator(mode="after")
    def _one_baseline(self) -> TrainConfig:
        for name in (self.train.imitation_teacher, *self.train.teacher_candidates):
            PolicySpec.parse(name)  # a bad teacher is one line now, not after the whole run
        if self.train.teacher_candidates and not tuned_per_regime(self.train.imitation_teacher):
            raise ConfigError(f"teacher_candidates: the teacher {self.train.imitation_teacher!r} is not tuned per regime (use best)")
        if PolicySpec.parse(self.train.imitation_teacher).kind == "elastic-best":
            if not self.env.elastic:
                raise ConfigError("imitation_teacher elastic-best resizes running jobs: set [env] elastic = true")
            if self.train.ppo_baseline:
                raise ConfigError("ppo_baseline: the baseline runs without resizes, so elastic-best cannot be it")
        if self.train.candidate_policy_file and not self.train.teacher_candidates:
            raise ConfigError("candidate_policy_file names the file of a `learned` teacher candidate: list one in teacher_candidates")
        train = self.train
        if train.clone_from_candidate and not (train.candidate_policy_file and train.imitation_steps and not train.init_policy):
            raise ConfigError(
                "clone_from_candidate clones into candidate_policy_file's weights: set it and imitation_steps, not init_policy"
            )
        if self.train.ppo_baseline and self.env.baseline is not None:
            raise ConfigError("set [env] baseline or [train] ppo_baseline (the teacher as the baseline), not both")
        return self


def load_train_config(path: str | Path) -> TrainConfig:
    """The training config of a TOML file, which may start with ``extends = "other.toml"``: that config with this file's
    tables merged in (:func:`placer.common.tomlfile.merged`; a list, e.g. ``settings``, is replaced whole)."""
    data = read_toml(Path(path), what="training config", extends=True)
    if "recipe" in data:
        raise ConfigError(
            f"{path}: a config with a [recipe] table is a recipe of several runs: run it with placer.policies.recipe (placer train)"
        )
    return load_toml(Path(path), TrainConfig, what="training config", extends=True)
