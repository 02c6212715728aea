"""Train a placement policy with MaskablePPO.

    placer train --config data/configs/pacml.toml --out runs/pacml [--timesteps N] [--resume]

Writes into ``--out``: ``checkpoint.pt`` (policy + optimiser + step count, atomically every ``checkpoint_every`` steps,
after the warm start and on interrupt), ``best.pt`` (the policy file with the lowest validation blocking rate so far),
``policy.pt`` (the final policy file, a copy of ``last.pt``), ``imitation.json`` (the warm start's size and agreement with its teacher;
its recorded decisions are kept in ``recorded/``, :mod:`placer.policies.warm`, so a resume stopped in the warm start records none again),
``eval.jsonl`` (validation blocking rate of the policy and the heuristics per evaluation), ``config.json``, ``inputs.json``
(the sha256 of the policy files it names: a resume compares their content, not their paths) and TensorBoard
logs in ``tb/``, and ``summary.json``: the final policy's validation blocking rate paired with its teacher's and each
heuristic's on the same streams. ``--resume`` continues from ``checkpoint.pt``: only the rollout in flight is lost.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import cast

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from placer.cluster.topology import load_cluster
from placer.common.atomic import atomic_path, write_atomic
from placer.common.errors import TrainingError
from placer.common.pool import sigterm_as_interrupt
from placer.cost import CostModel
from placer.envs.config import EnvConfig
from placer.envs.env import ClusterPlacementEnv, cost_models_for
from placer.envs.observation import GraphTable
from placer.policies.config import TrainConfig
from placer.policies.extractor import PlacementExtractor
from placer.policies.loading import LearnedPolicy
from placer.policies.model import policy_kwargs, save_policy_file
from placer.policies.promotion import check_promote_target, promote_if_not_worse
from placer.policies.run_folder import INPUTS, check_same_config, policy_inputs, prepare_out
from placer.policies.scorer import OptionPolicy
from placer.policies.teachers import FamilyTunings, check_baseline_early, teacher_members, with_baseline
from placer.policies.validation import RatesCache, paired_summary
from placer.policies.warm import start_weights, warm_start


class TrainingCallback(BaseCallback):
    """Checkpoints and validation against the heuristics, every so many environment steps."""

    model: MaskablePPO

    def __init__(self, out: Path, config: TrainConfig, cache: RatesCache | None = None) -> None:
        super().__init__()
        self.cache = cache or RatesCache()
        self.out, self.config = out, config
        self.env = config.env
        self.arch = config.policy.model_dump()
        self.last_checkpoint = self.last_eval = 0
        self.best = float("inf")
        self.baselines: dict[str, float] = {}
        self.evaluated: tuple[int, np.ndarray] | None = None  # (timesteps, per-stream rates) of the latest validation

    def _on_training_start(self) -> None:
        self.last_checkpoint = self.last_eval = self.num_timesteps
        best_file = self.out / "eval.jsonl"
        if best_file.exists():
            self.best = min((r["learned"] for r in read_eval_rows(best_file)), default=float("inf"))
        train = self.config.train
        for name in train.baselines:
            rates = self.cache.rates(name, self.env, train.eval_episodes, train.eval_workers, ray=train.ray)
            self.baselines[name] = float(np.mean(rates))
        if self.num_timesteps == 0 and self.config.train.validate_start:
            self.evaluate()  # the starting (possibly warm-started) policy is a candidate too

    def _on_rollout_start(self) -> None:
        self._extractor().rollout_cache = {}  # weights are fixed until the next update
        if kls := getattr(self.model.policy, "anchor_kls", None):  # the last update's, when PPO is anchored
            self.logger.record("train/anchor_kl", float(np.mean(kls)))
            kls.clear()

    def _on_rollout_end(self) -> None:
        self._extractor().rollout_cache = None

    def _extractor(self) -> PlacementExtractor:
        """The graph encoder of the model's policy (an :class:`OptionPolicy`: build_model makes it)."""
        policy = self.model.policy
        if not isinstance(policy, OptionPolicy):
            raise TypeError(f"training expects an OptionPolicy, got {type(policy).__name__}")
        return policy.features_extractor

    def _on_step(self) -> bool:
        every = self.config.train
        if self.num_timesteps - self.last_checkpoint >= every.checkpoint_every:
            self.last_checkpoint = self.num_timesteps
            save_checkpoint(self.model, self.out / "checkpoint.pt")
        if self.num_timesteps - self.last_eval >= every.eval_every:
            self.last_eval = self.num_timesteps
            self.evaluate()
        return True

    def evaluated_policy(self) -> LearnedPolicy:
        """The current policy as a placer policy (validation resets it before every stream)."""
        policy = self.model.policy
        policy.set_training_mode(False)
        if policy.device.type != "cpu":  # decisions are taken one at a time on the CPU (numpy actor)
            policy = copy.deepcopy(policy).to("cpu")
        return LearnedPolicy.of(policy, self.env)

    def evaluate(self) -> float:
        """Validate the current policy (saved first to ``validating.pt``, read by ``eval_workers`` processes); the best so
        far becomes ``best.pt``."""
        policy = self.model.policy
        policy.set_training_mode(False)
        candidate = self.out / "validating.pt"
        save_policy_file(candidate, policy, self.env, self.arch)
        train = self.config.train
        rates = self.cache.file_rates(candidate, self.env, train.eval_episodes, train.eval_workers, ray=train.ray)
        self.evaluated = (self.num_timesteps, rates)
        rate = float(np.mean(rates))
        self.logger.record("eval/blocking_rate", rate)
        for name, value in self.baselines.items():
            self.logger.record(f"eval/blocking_rate_{name}", value)
        row = {"timesteps": self.num_timesteps, "learned": rate, **self.baselines}
        with (self.out / "eval.jsonl").open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        if rate < self.best:
            self.best = rate
            write_atomic(self.out / "best.pt", candidate.read_bytes())
        return rate


def save_checkpoint(model: MaskablePPO, path: Path) -> None:
    payload = {
        "policy": model.policy.state_dict(),
        "optimizer": model.policy.optimizer.state_dict(),
        "num_timesteps": int(model.num_timesteps),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(model: MaskablePPO, path: Path) -> None:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        model.policy.load_state_dict(payload["policy"])
        model.policy.optimizer.load_state_dict(payload["optimizer"])
    except Exception as exc:
        raise TrainingError(f"cannot resume from {path}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    model.num_timesteps = int(payload["num_timesteps"])


def _monitored_env(env_config: EnvConfig, own_process: bool, cost_models: list[CostModel] | None = None) -> Monitor:
    if own_process:
        torch.set_num_threads(1)  # an env process steps the simulator; torch there would only contend
    return Monitor(ClusterPlacementEnv(env_config, cost_models=cost_models))


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda`` without one is an error."""
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("--device cuda: torch sees no CUDA device here (use auto or cpu)")
    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def build_model(config: TrainConfig, out: Path) -> MaskablePPO:
    env_config, ppo, arch = config.env, config.ppo, config.policy
    # Monitor records episode returns and lengths, so rollout/ep_rew_mean reaches TensorBoard.
    own_process = ppo.vec_env == "subproc"
    shared = None if own_process else cost_models_for(env_config)  # envs of one process fill one set of caches
    factories: list[Callable[[], gym.Env]] = [partial(_monitored_env, env_config, own_process, shared) for _ in range(ppo.n_envs)]
    vec_env = SubprocVecEnv(factories, start_method="spawn") if ppo.vec_env == "subproc" else DummyVecEnv(factories)
    vec_env.seed(config.train.seed)
    return MaskablePPO(
        OptionPolicy,
        vec_env,
        seed=config.train.seed,
        tensorboard_log=str(out / "tb"),
        verbose=0,
        device=resolve_device(config.train.device),
        policy_kwargs=policy_kwargs(arch.hidden, arch.rounds, arch.net_arch, GraphTable.from_config(env_config)),
        **ppo.model_dump(exclude={"n_envs", "vec_env", "anchor_kl", "detach_critic"}),
    )


def init_weights(config: TrainConfig) -> dict[str, torch.Tensor] | None:
    """The weights of ``config.train.init_policy`` (None without one; :func:`~placer.policies.warm.start_weights`). A
    ``clone_from_candidate`` file is checked too: read before anything slow runs, so a bad file is one line at once."""
    if config.train.clone_from_candidate and config.train.candidate_policy_file:
        start_weights(config.train.candidate_policy_file, config, "candidate_policy_file")
    return start_weights(config.train.init_policy, config, "init_policy") if config.train.init_policy else None


def read_eval_rows(path: Path) -> list[dict]:
    """The complete JSON rows of a log; a line cut short by a crash is skipped."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("learned"), int | float):
            rows.append(row)
    return rows


def train(
    config: TrainConfig,
    out: Path,
    *,
    timesteps: int | None = None,
    resume: bool = False,
    force: bool = False,
    progress: bool = True,
    report=None,
    promote: Path | None = None,
    cache: RatesCache | None = None,
) -> Path:
    """Train (or resume) and return the path of the final policy file.

    A non-empty ``out`` is refused unless ``resume`` (continue from its checkpoint) or ``force``
    (start over in it). SIGTERM and Ctrl-C save a checkpoint before stopping. ``report(message)``
    hears each phase as it starts (warm start, baseline validation, PPO, final validation).
    ``promote``: also copy the final policy there (e.g. over ``data/policies/``), but only if the paired
    validation does not find it blocking more jobs than its teacher's online rule (the 95 % interval of the difference
    reaches 0: :meth:`~placer.policies.validation.PairedSummary.not_worse_than_reference`; else the file there is kept); it is
    checked first (:func:`check_promote_target`). ``cache``: named policies' validation rates, shared by a recipe's stages;
    the heuristic families' tunings (``tuning.json``) are kept beside its file (a recipe's folder), else in ``out``."""
    report = report or (lambda message: None)
    if timesteps is not None and timesteps < 0:
        raise TrainingError(f"--timesteps must be a number of environment steps >= 0 (0: no PPO), got {timesteps}")
    if promote is not None:
        check_promote_target(promote)
    weights = init_weights(config)  # a bad init_policy or baseline is refused before anything is written or tuned
    check_baseline_early(config)
    for cluster in config.env.all_clusters:  # an unknown cluster is one line before anything is written
        load_cluster(cluster)
    prepare_out(out, resume=resume, force=force)
    with reproducible_torch(config.train.torch_threads):
        return _train(
            config, out, weights, timesteps=timesteps, resume=resume, progress=progress, report=report, promote=promote, cache=cache
        )


@contextmanager
def reproducible_torch(threads: int) -> Iterator[None]:
    """torch on ``threads`` CPU threads with its deterministic kernels, both as before on exit: on 2 threads torch sums
    the graph encodings' gradient over a minibatch's rows in parallel, in another order each run, so the same config and
    seed cloned other weights (0.02 apart after one epoch) and DAgger rounds then visited other states.
    ``warn_only``: an op with no deterministic kernel (some on CUDA) warns rather than stops a run."""
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])


def _train(
    config: TrainConfig,
    out: Path,
    weights: dict[str, torch.Tensor] | None,
    *,
    timesteps: int | None,
    resume: bool,
    progress: bool,
    report: Callable[[str], None],
    promote: Path | None,
    cache: RatesCache | None,
) -> Path:
    """:func:`train` once ``out`` is prepared (``weights``: :func:`init_weights`' of the config)."""
    saved, inputs = out / "config.json", policy_inputs(config)
    if resume and saved.exists():
        check_same_config(saved, config, inputs)
    write_atomic(saved, config.model_dump_json(indent=1) + "\n")
    write_atomic(out / INPUTS, json.dumps(inputs, indent=1) + "\n")
    members = teacher_members(config, out, progress, FamilyTunings((cache.path.parent if cache and cache.path else out) / "tuning.json"))
    config = with_baseline(config, members)
    model = build_model(config, out)
    checkpoint = out / "checkpoint.pt"
    if resume and checkpoint.exists():
        load_checkpoint(model, checkpoint)
    else:
        if resume:
            report(f"--resume: no {checkpoint} to continue from; starting from scratch")
        (out / "eval.jsonl").unlink(missing_ok=True)
        if config.train.init_policy:
            report(f"starting from the weights of {config.train.init_policy}")
        elif config.train.imitation_steps:
            report(f"warm start: recording {config.train.imitation_steps:,} decisions of {config.train.imitation_teacher} and cloning them")
        warm_start(model, config, out, progress, members, weights)
        save_checkpoint(model, checkpoint)  # a run stopped in its first validation resumes after the warm start, not before
    if config.ppo.anchor_kl > 0:
        _anchor(model, config, out / "anchor.pt")
    cast(OptionPolicy, model.policy).mlp_extractor.detach_critic = config.ppo.detach_critic
    first = [*config.train.baselines, *(["the starting policy"] if config.train.validate_start else [])]
    total = timesteps or config.train.timesteps
    ppo = "PPO (progress bar)" if total > model.num_timesteps else "no PPO steps"
    report((f"validating {', '.join(first)}, then " if first else "") + ppo)
    callback = TrainingCallback(out, config, cache)
    steps_before = model.num_timesteps
    try:
        with sigterm_as_interrupt():  # a checkpoint is saved before the process ends
            model.learn(  # with no PPO steps left it only validates the starting policy and the baselines
                total_timesteps=max(total - model.num_timesteps, 0),
                callback=callback,
                progress_bar=progress and total > model.num_timesteps,
                reset_num_timesteps=False,
                tb_log_name=f"ppo-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}",  # each run (and each resume) its own TB folder
            )
    except KeyboardInterrupt:
        save_checkpoint(model, checkpoint)
        raise
    save_checkpoint(model, checkpoint)
    env_config = config.env
    save_policy_file(out / "last.pt", model.policy, env_config, config.policy.model_dump())
    updated = model.num_timesteps != steps_before  # a validation during PPO's last rollout preceded its last update
    if updated or callback.evaluated is None:
        report("validating the final policy")
        callback.evaluate()  # logs the final policy; best.pt changes only if it beats every earlier one
    final = out / "policy.pt"
    write_atomic(final, (out / "last.pt").read_bytes())
    report("paired validation of the final policy against its teacher and the heuristics")
    measured = callback.evaluated[1] if callback.evaluated else None
    summary = paired_summary(callback.evaluated_policy(), config, measured, cache, progress)
    write_atomic(out / "summary.json", summary.model_dump_json(indent=1) + "\n")
    for line in summary.lines():
        report(line)
    if promote is not None:
        promote_if_not_worse(final, promote, summary, report)
    return final


def _anchor(model: MaskablePPO, config: TrainConfig, path: Path) -> None:
    """Anchor PPO to the policy it starts from (``path`` keeps it, so that a resumed run has the same anchor)."""
    policy = model.policy
    if not isinstance(policy, OptionPolicy):
        raise TypeError(f"anchoring expects an OptionPolicy, got {type(policy).__name__}")
    anchor = copy.deepcopy(policy)
    if path.exists():  # a resumed run: its policy has moved, its anchor has not
        anchor.load_state_dict(torch.load(path, map_location=model.device, weights_only=True))
    else:
        with atomic_path(path) as tmp:
            torch.save(anchor.state_dict(), tmp)
    policy.anchor_to(anchor, config.ppo.anchor_kl, config.ppo.ent_coef)
    model.ent_coef = 1.0  # the entropy slot now carries ent_coef * H - anchor_kl * KL
