"""Training configuration (TOML, validated with pydantic)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envs.config import EnvConfig
from placer.baselines.specs import PolicySpec
from placer.common.errors import ConfigError
from placer.common.tomlfile import load_toml, read_toml

REGIME_TEACHERS = ("best",)  # teachers tuned per regime (policies.teachers)


def tuned_per_regime(teacher: str) -> bool:
    """Whether the teacher ``teacher`` is tuned per regime (needs :func:`policies.teachers.regime_members`' table)."""
    return PolicySpec.parse(teacher, plugins={}).kind in REGIME_TEACHERS


class PPOSection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    n_envs: int = Field(4, ge=1)
    vec_env: Literal["dummy", "subproc"] = "dummy"  # subproc: one process per env (same seeds, same rollouts)
    n_steps: int = Field(256, ge=8)
    batch_size: int = Field(256, ge=8)
    n_epochs: int = Field(4, ge=1)
    learning_rate: float = Field(3e-4, gt=0)
    gamma: float = Field(0.99, gt=0, le=1)
    gae_lambda: float = Field(0.95, gt=0, le=1)
    clip_range: float = Field(0.2, gt=0)
    ent_coef: float = Field(0.01, ge=0)
    vf_coef: float = Field(0.5, ge=0)
    anchor_kl: float = Field(0.0, ge=0)  # > 0: add this x KL(starting policy || policy) to the loss (OptionPolicy.anchor_to)


class PolicySection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hidden: int = Field(64, ge=4, le=8192)  # bounded: a typo (1e7) would try to allocate terabytes
    rounds: int = Field(3, ge=1, le=64)
    net_arch: list[Annotated[int, Field(ge=1, le=65536)]] = Field([128], max_length=16)  # the option scorer's width


class TrainSection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    timesteps: int = Field(200_000, ge=0)  # PPO's environment steps; 0: the warm start (imitation) only
    seed: int = 0
    checkpoint_every: int = Field(20_000, ge=1)
    eval_every: int = Field(20_000, ge=1)
    eval_episodes: int = Field(2, ge=1)
    validate_start: bool = True  # validate the starting policy too (a warm start is then a candidate for best.pt)
    torch_threads: int = Field(2, ge=1)
    baselines: list[str] = ["para_min", "para_min+best_fit", "lean"]  # heuristics validated beside the policy
    imitation_teacher: str = "lean"  # heuristic cloned before PPO starts; "best": the member tuned per episode's regime
    teacher_pooled: list[Literal["cluster", "load", "beta_dist", "queue", "size", "structure"]] = []  # best: pool over these
    # best: more candidates for each regime's member beside every heuristic family (e.g. a shipped learned policy,
    # learned:default), scored on the same tuning streams and chosen where they block fewer avoidable jobs
    teacher_candidates: list[str] = []
    # best: a candidate is the member only where it blocks at least this fraction fewer avoidable jobs than the families' best
    # (tuning streams are few: a small lead there is often noise, docs/learning.md)
    teacher_margin: float = Field(0.0, ge=0, lt=1)
    # best: the policy file a plain `learned` candidate runs (default: the shipped policy); the recipe names the winner of
    # its RL stage here (policies.recipe)
    candidate_policy_file: str | None = None
    imitation_steps: int = Field(0, ge=0)  # decisions to record; 0 skips the warm start
    imitation_per_episode: int = Field(0, ge=0)  # record at most this many decisions of an episode (uniformly); 0: all of them
    imitation_epochs: int = Field(5, ge=1)
    imitation_learning_rate: float = Field(1e-3, gt=0)
    imitation_workers: int = Field(1, ge=1)  # processes recording the teacher (a slow teacher such as lookahead)
    eval_workers: int = Field(1, ge=1)  # processes tuning best per regime and validating the teacher and baselines (the policy
    # trained runs in this one): the same figures for any count
    dagger_rounds: int = Field(0, ge=0)  # after cloning: rounds of (learner drives, teacher labels, clone again on all)
    dagger_steps: int = Field(10_000, ge=1)  # decisions recorded per round
    ppo_baseline: bool = False  # PPO's reward less the teacher's on the same arrivals (envs.baseline): an input-dependent baseline
    # start from this policy file's weights instead of the warm start (same observation and network; a fixed one widened)
    init_policy: str | None = None
    imitation_temperature: float = Field(0.0, ge=0)  # > 0: fit a planner teacher's soft targets at this temperature (jobs)
    device: Literal["auto", "cpu", "cuda"] = "cpu"  # PPO's network; auto: CUDA when present (the warm start runs on the CPU)


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
        if self.train.candidate_policy_file and not self.train.teacher_candidates:
            raise ConfigError("candidate_policy_file names the file of a `learned` teacher candidate: list one in teacher_candidates")
        if self.train.ppo_baseline and self.env.baseline is not None:
            raise ConfigError("set [env] baseline or [train] ppo_baseline (the teacher as the baseline), not both")
        return self


def load_train_config(path: str | Path) -> TrainConfig:
    """The training config of a TOML file, which may start with ``extends = "other.toml"``: that config with this file's
    tables merged in (:func:`placer.common.tomlfile.merged`; a list, e.g. ``settings``, is replaced whole)."""
    data = read_toml(Path(path), what="training config", extends=True)
    if "recipe" in data:
        raise ConfigError(f"{path}: a config with a [recipe] table is a recipe of several runs: run it with policies.recipe (placer train)")
    return load_toml(Path(path), TrainConfig, what="training config", extends=True)
