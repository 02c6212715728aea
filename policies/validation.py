"""Validation of a policy during and after training: blocking rates on fixed streams, paired with heuristics.

Every policy is run on the same streams (each cluster x queue x size spread x structure x load x beta
distribution x ``eval_episodes`` seeds of each setting of the environment, fixed: ``numpy`` seeds ``[10_000 + k, i]``),
so differences are paired per stream and their 95 % intervals are far narrower than those of the rates themselves.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel
from tqdm.auto import tqdm

from placer.baselines.policy import Policy
from placer.baselines.specs import PolicySpec
from placer.common.progress import bar_off
from placer.cost import CostModel
from placer.envs.config import EnvConfig
from placer.envs.regime import POOLED, Regime
from placer.evaluate.config import VALIDATION_SEED, EvaluationConfig
from placer.evaluate.parallel import run_task_groups
from placer.evaluate.runner import Runner, tasks
from placer.evaluate.stats import mean_ci95, plus_minus
from placer.policies.policy_file import read_policy_file

if TYPE_CHECKING:
    from placer.policies.config import TrainConfig


def validation_configs(env: EnvConfig, episodes: int, policy: str | PolicySpec) -> Iterator[EvaluationConfig]:
    """The evaluations that make up a validation of ``policy``: one per cluster x queue x size x structure of ``env`` (of
    each of its settings in turn), each once, each beta distribution once: a setting listed twice (to weigh it more in
    training) would count its streams twice and make every paired interval look narrower than its streams warrant."""
    seen: set[str] = set()
    for variant in env.variants:
        w = variant.workload
        betas = tuple(dict.fromkeys(w.beta_dists))
        for cluster, queue, size, structure in itertools.product(variant.clusters, w.queue, w.size, w.structure):
            config = EvaluationConfig(
                cluster=cluster,
                workload=w.model_copy(update={"queue": (queue,), "size": (size,), "structure": (structure,), "beta_dists": betas}),
                seeds=episodes, first_seed=VALIDATION_SEED, policies=[str(policy)], max_degree=env.max_degree,
                strategy=env.strategy, loads=variant.loads,
            )  # fmt: skip
            if (key := config.model_dump_json()) not in seen:
                seen.add(key)
                yield config


def validation_rates(
    policy: str | PolicySpec | Policy,
    env: EnvConfig,
    episodes: int,
    workers: int = 1,
    progress: bool = False,
    *,
    ray: str | None = None,
) -> np.ndarray:
    """Blocking rate per validation stream (module docstring), in a fixed order: cluster, queue, size, structure, then the
    evaluation's task order (load, beta, episode).

    ``policy``: a policy name (built, and tuned per cell if it tunes, like ``placer evaluate`` does) or a built policy
    (e.g. the one being trained), reset before every stream. ``workers`` > 1 runs a named policy's streams in that many
    processes (:func:`placer.evaluate.parallel.run_task_groups`, one pool for every evaluation: the same rates, a task's
    result depending only on its seed), or given ``ray`` (a Ray cluster's address) as Ray tasks there; a built policy
    always runs here. ``progress``: a bar over the streams on stderr.
    """
    name = policy.name if isinstance(policy, Policy) else policy
    configs = list(validation_configs(env, episodes, name))
    return np.concatenate(list(config_rates(policy, configs, workers, progress, ray=ray)))


def config_rates(
    policy: str | PolicySpec | Policy,
    configs: list[EvaluationConfig],
    workers: int = 1,
    progress: bool = False,
    *,
    ray: str | None = None,
) -> Iterator[np.ndarray]:
    """:func:`validation_rates` of each of ``configs`` in turn (one array of its streams' rates per config, as each is
    measured). A config naming a ``policy_file`` runs ``learned`` from that file over ``workers`` processes (or ``ray``)."""
    name = policy.name if isinstance(policy, Policy) else policy
    total = sum(len(tasks(c)) for c in configs)
    costs: dict[tuple[str, str], CostModel] = {}  # one per cluster and strategy: its caches serve every evaluation on it
    with tqdm(total=total, desc=f"validating {name}", unit="stream", disable=bar_off(progress), leave=False) as bar:
        if (workers > 1 or ray is not None) and not isinstance(policy, Policy):  # one pool for every evaluation
            groups = [(config, tasks(config)) for config in configs]
            for done in run_task_groups(groups, workers=workers, ray_address=ray, on_task=lambda _: bar.update()):
                yield np.array([summary["blocking_rate"] for summary, _ in done], dtype=float)
            return
        for config in configs:
            cost = costs.get((config.cluster, config.strategy))
            runner = Runner(config, policies=[policy] if isinstance(policy, Policy) else None, cost=cost)
            costs[config.cluster, config.strategy] = runner.cost
            rates = []
            for task in tasks(config):
                rates.append(runner.run(task)[0]["blocking_rate"])
                bar.update()
            yield np.array(rates, dtype=float)


def policy_file_rates(
    path: Path, env: EnvConfig, episodes: int, workers: int = 1, progress: bool = False, *, ray: str | None = None
) -> np.ndarray:
    """:func:`validation_rates` of the policy saved at ``path``: here when ``workers`` is 1, else over that many processes
    (or on the Ray cluster at ``ray``, whose nodes see ``path``), each reading the file (``learned`` with its
    ``policy_file``). The same rates either way: the file's weights are the numpy actor's whether it runs here or there,
    and a stream's result depends only on its seed."""
    configs = list(validation_configs(env, episodes, "learned"))
    return np.concatenate(list(file_config_rates(path, configs, workers, progress, ray=ray)))


def file_config_rates(
    path: Path, configs: list[EvaluationConfig], workers: int = 1, progress: bool = False, *, ray: str | None = None
) -> Iterator[np.ndarray]:
    """:func:`config_rates` of the policy saved at ``path`` (``configs`` name ``learned``)."""
    from placer.policies.loading import LearnedPolicy

    if not configs:
        return iter(())
    if workers <= 1 and ray is None:
        return config_rates(LearnedPolicy.from_file(path), configs, progress=progress)
    named = [c.model_copy(update={"policy_file": str(path.resolve())}) for c in configs]  # read where the tasks run
    return config_rates(f"learned ({path.name})", named, workers, progress, ray=ray)


def validation_regimes(env: EnvConfig, episodes: int) -> list[Regime]:
    """The regime of each stream of :func:`validation_rates`, in the same order."""
    out: list[Regime] = []
    for config in validation_configs(env, episodes, "para_min"):  # the policy does not change the streams
        w = config.workload
        out.extend(
            Regime(config.cluster, config.load_values[t.load_index], POOLED, w.queue[0], w.size[0], w.structure[0]) for t in tasks(config)
        )  # the beta distributions pooled within a regime
    return out


class RegimeRow(BaseModel):
    """A policy against a reference on one regime's paired validation streams (difference = reference - learned)."""

    regime: str
    streams: int
    learned: float
    reference: float
    difference: float
    half: float  # 95 % half-width of the difference (NaN: one stream)

    @property
    def not_worse(self) -> bool:
        """The interval of (reference - learned) reaches 0 or above (with one stream: the difference is >= 0)."""
        return not_worse(self.difference, self.half)


def regime_rows(learned: np.ndarray, reference: np.ndarray, regimes: list[Regime]) -> list[RegimeRow]:
    """``learned`` against ``reference`` (per-stream rates in :func:`validation_rates`' order) regime by regime."""
    if not len(learned) == len(reference) == len(regimes):
        raise ValueError(f"rates of {len(learned)} and {len(reference)} streams for {len(regimes)} regimes")
    rows = []
    for regime in sorted(set(regimes)):
        index = [i for i, r in enumerate(regimes) if r == regime]
        diff, half = mean_ci95((reference[index] - learned[index]).tolist())
        rows.append(
            RegimeRow(
                regime=str(regime),
                streams=len(index),
                learned=float(np.mean(learned[index])),
                reference=float(np.mean(reference[index])),
                difference=diff,
                half=half,
            )  # fmt: skip
        )
    return rows


def pooled_row(learned: np.ndarray, reference: np.ndarray) -> RegimeRow:
    """``learned`` against ``reference`` over every stream at once (regime ``pooled``): per-stream paired differences,
    so regimes with more streams weigh more."""
    if len(learned) != len(reference):
        raise ValueError(f"rates of {len(learned)} and {len(reference)} streams")
    diff, half = mean_ci95((reference - learned).tolist())
    return RegimeRow(
        regime="pooled",
        streams=len(learned),
        learned=float(np.mean(learned)),
        reference=float(np.mean(reference)),
        difference=diff,
        half=half,
    )


def not_worse(difference: float, half: float | None) -> bool:
    """Whether a paired difference (reference - learned, mean and 95 % half-width) leaves the learned policy no worse: the
    interval reaches 0 or above; with one stream (no interval, ``half`` NaN or None) the difference itself must be >= 0."""
    return difference >= 0 or (half is not None and not math.isnan(half) and difference + half >= 0)


class RatesCache:
    """:func:`validation_rates` of named policies and policy files, each measured once per (policy, evaluation): a named
    policy's rates on the fixed validation streams never change, so the stages of one recipe that validate the same
    heuristics share them, evaluation by evaluation: an environment that repeats a setting, or shares some with another,
    measures only the evaluations not measured before. A built policy (the one being trained) is never cached. With a
    ``path`` the rates are also kept in that JSON file (rewritten whole after each evaluation), so a resumed recipe
    measures none twice."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._rates: dict[tuple[str, str, int], np.ndarray] = self._read()

    def _read(self) -> dict[tuple[str, str, int], np.ndarray]:
        """The rates kept in ``path`` (none when there is no file, or one we did not write whole: measured again)."""
        kept: dict[tuple[str, str, int], np.ndarray] = {}
        if self.path is None or not self.path.exists():
            return kept
        try:
            for e in json.loads(self.path.read_text()):
                kept |= _split_entry(e["policy"], e["streams"], e["episodes"], np.array(e["rates"], dtype=float))
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        return kept

    def _save(self) -> None:
        """Write every rate kept here and in the file: stages in other processes (the RL seeds) share the file."""
        if self.path is None:
            return
        from placer.common.atomic import write_atomic

        self._rates = self._read() | self._rates
        entries = [{"policy": p, "streams": k, "episodes": e, "rates": r.tolist()} for (p, k, e), r in self._rates.items()]
        write_atomic(self.path, json.dumps(entries) + "\n")

    def warm(self, config: TrainConfig, workers: int | None = None) -> None:
        """Measure now the named policies a training run of ``config`` validates against (:func:`paired_summary`'s:
        its teacher, the online rule it must not be worse than, its baselines), over ``workers`` processes (default: its
        ``eval_workers``; the rates are the same for any count), or on the Ray cluster of its ``ray``."""
        teacher = config.train.imitation_teacher
        for name in dict.fromkeys([teacher, online_reference(teacher), *config.train.baselines]):
            self.rates(name, config.env, config.train.eval_episodes, workers or config.train.eval_workers, ray=config.train.ray)

    def rates(
        self, policy: str, env: EnvConfig, episodes: int, workers: int = 1, progress: bool = False, *, ray: str | None = None
    ) -> np.ndarray:
        configs = list(validation_configs(env, episodes, policy))
        return self._kept(str(policy), configs, episodes, lambda todo: config_rates(policy, todo, workers, progress, ray=ray))

    def file_rates(
        self, path: Path, env: EnvConfig, episodes: int, workers: int = 1, progress: bool = False, *, ray: str | None = None
    ) -> np.ndarray:
        """:func:`policy_file_rates` of the policy file at ``path``, kept under its policy's digest
        (:meth:`~placer.policies.policy_file.PolicyPayload.digest`: env, architecture, weights): a resumed run validates the
        same policy once, even saved again, and a file rewritten with other weights is measured again."""
        digest = read_policy_file(path).digest()
        configs = list(validation_configs(env, episodes, "learned"))
        measure = lambda todo: file_config_rates(path, todo, workers, progress, ray=ray)  # noqa: E731
        return self._kept(f"file:{digest}", configs, episodes, measure)

    def _kept(
        self, name: str, configs: list[EvaluationConfig], episodes: int, measure: Callable[[list[EvaluationConfig]], Iterator[np.ndarray]]
    ) -> np.ndarray:
        """The rates kept under ``name`` for the streams of ``configs``, each evaluation not kept yet measured once
        (``measure(todo)`` yields their rates in order) and kept (and saved) as it comes."""
        # keyed by the evaluations themselves: environments that differ only in what the streams do not depend on (the
        # reward, a baseline, the observation) share their rates
        keys = [(name, c.model_dump_json(), episodes) for c in configs]
        todo = {key: config for key, config in zip(keys, configs, strict=True) if key not in self._rates}
        for key, rates in zip(todo, measure(list(todo.values())) if todo else (), strict=True):
            self._rates[key] = rates
            self._save()
        return np.concatenate([self._rates[key] for key in keys])


def _split_entry(policy: str, streams: str, episodes: int, rates: np.ndarray) -> dict[tuple[str, str, int], np.ndarray]:
    """A kept entry as one entry per evaluation: an entry of an earlier version keyed a whole validation (its
    evaluations' JSON joined by newlines) and is split by each evaluation's stream count."""
    lines = streams.split("\n")
    counts = [len(tasks(EvaluationConfig.model_validate_json(line))) for line in lines] if len(lines) > 1 else [len(rates)]
    if sum(counts) != len(rates):
        raise ValueError(f"{len(rates)} rates for {sum(counts)} streams")
    bounds = np.cumsum([0, *counts])
    return {(policy, line, episodes): rates[a:b] for line, a, b in zip(lines, bounds[:-1], bounds[1:], strict=True)}


class PairedRow(BaseModel):
    policy: str
    blocking: float
    blocking_half: float  # 95 % half-width over streams (NaN: one stream)
    minus_learned: float | None  # mean over streams of (this policy's rate - the learned policy's)
    minus_learned_half: float | None


def online_reference(teacher: str) -> str:
    """The online rule a policy distilled from ``teacher`` must not be worse than: the teacher itself, or
    for the clairvoyant ``hindsight`` (which no online policy can match) the lean rule it plans around."""
    spec = PolicySpec.parse(teacher)
    if spec.kind != "hindsight":
        return teacher
    lean_args = tuple((key, text) for key, text in spec.args if key in ("admit", "free", "cap"))
    return str(spec.replace(kind="lean", args=lean_args))


class PairedSummary(BaseModel):
    """The learned policy against its teacher and the heuristics on the same validation streams."""

    streams: int
    teacher: str
    reference: str = ""  # the online rule the policy must not be worse than (:func:`online_reference`)
    rows: list[PairedRow]

    def not_worse_than_reference(self) -> bool:
        """True unless the learned policy resolvably blocks more jobs than :attr:`reference` on the paired streams: the 95 %
        interval of (reference - learned) reaches 0 or above (issue 29's "no higher than the per-regime best: the interval
        includes 0, or better"); with one stream, no interval, its difference must be >= 0."""
        row = next(r for r in self.rows if r.policy.removesuffix(" (teacher)") == self.reference)
        return row.minus_learned is not None and not_worse(row.minus_learned, row.minus_learned_half)

    def lines(self) -> list[str]:
        """A table for the terminal: a positive difference means the learned policy blocks fewer jobs."""
        out = [f"validation, {self.streams} paired streams (blocking rate; difference = baseline - learned, 95 % interval):"]
        width = max(len(r.policy) for r in self.rows) + 2
        for r in self.rows:
            rate = plus_minus(r.blocking, r.blocking_half)
            mean, half = r.minus_learned, r.minus_learned_half  # set together: None for the learned row itself
            diff = "" if mean is None or half is None else f"   {_signed(mean, half)}  {_verdict(r)}"
            out.append(f"  {r.policy:<{width}}{rate}{diff}")
        return out


def paired_summary(
    learned: Policy, config, learned_rates: np.ndarray | None = None, cache: RatesCache | None = None, progress: bool = False
) -> PairedSummary:
    """Validate the learned policy, its teacher and the configured heuristics on the same streams (``learned_rates``:
    the learned policy's :func:`validation_rates`, when already measured; ``cache``: named policies' rates measured
    before; ``progress``: a bar over each policy's streams)."""
    env, episodes = config.env, config.train.eval_episodes
    teacher = config.train.imitation_teacher
    reference = online_reference(teacher)
    learned_rates = validation_rates(learned, env, episodes, progress=progress) if learned_rates is None else learned_rates
    rows = [_row("learned", learned_rates, None)]
    for name in dict.fromkeys([teacher, reference, *config.train.baselines]):
        rates = (cache or RatesCache()).rates(name, env, episodes, config.train.eval_workers, progress, ray=config.train.ray)
        label = f"{name} (teacher)" if name == teacher else name
        rows.append(_row(label, rates, learned_rates))
    return PairedSummary(streams=len(learned_rates), teacher=teacher, reference=reference, rows=rows)


def _row(name: str, rates: np.ndarray, learned: np.ndarray | None) -> PairedRow:
    mean, half = mean_ci95(rates.tolist())
    if learned is None:
        return PairedRow(policy=name, blocking=mean, blocking_half=half, minus_learned=None, minus_learned_half=None)
    diff, diff_half = mean_ci95((rates - learned).tolist())
    return PairedRow(policy=name, blocking=mean, blocking_half=half, minus_learned=diff, minus_learned_half=diff_half)


def _signed(mean: float, half: float) -> str:
    return f"{mean:+.3f} ± " + ("n/a" if math.isnan(half) else f"{half:.3f}")


def _verdict(row: PairedRow) -> str:
    mean, half = row.minus_learned, row.minus_learned_half
    if mean is None or half is None or math.isnan(half):  # set together: both None for the learned row itself
        return "(one stream: no interval)"
    if mean - half > 0:
        return "(learned blocks fewer)"
    if mean + half < 0:
        return "(learned blocks more)"
    return "(no difference resolved)"
