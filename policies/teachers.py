"""Who demonstrates in the warm start: one heuristic, or ``best``, the heuristic tuned for each episode's regime.

A regime is what an episode of the environment draws (:meth:`placer.envs.env.ClusterPlacementEnv.reset`'s ``info``): cluster, offered load,
beta distribution, queue, job-length spread and stream structure. For the teacher ``best`` every regime of the config is tuned before
recording, as ``placer evaluate`` tunes ``best`` (:class:`placer.baselines.best.Best`: the member of every heuristic family with the
least avoidable blocking on tuning streams apart from any evaluated or training stream); each episode is then demonstrated by its
regime's member. The teacher is *told* the regime; the student sees only what a deployed policy sees (with ``meter = true``, the offered
load it measures), so it has to learn to read the regime from the stream.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
from tqdm.auto import tqdm

from placer.baselines.best import TUNING_METRIC, Best
from placer.baselines.policy import Policy, Tuning
from placer.baselines.registry import PolicyContext, make_heuristic, make_policy
from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec
from placer.cluster.topology import Cluster, load_cluster
from placer.common.atomic import write_atomic
from placer.common.errors import EnvConfigError, PlacerError
from placer.common.pool import results_in_order
from placer.common.progress import bar_off
from placer.cost import CostModel
from placer.envs.config import EnvConfig
from placer.envs.env import check_heuristics, regimes, variant_of
from placer.envs.regime import REGIME_FIELDS, Regime, parse_table
from placer.evaluate.stats import mean_ci95
from placer.graphs.catalog import resolve_graph
from placer.graphs.job_graph import JobGraph
from placer.policies.config import REGIME_TEACHERS, TrainConfig, tuned_per_regime
from placer.policies.run_folder import file_sha256
from placer.sim.workload import WorkloadSpec


class _Parsed(Protocol):
    @property
    def spec(self) -> str: ...


T = TypeVar("T", bound=_Parsed)


Lead = tuple[float, float]  # a candidate's paired lead over the families' best: mean and 95 % half-width (avoidable blocking)
Scored = tuple[str, dict[str, float], dict[str, Lead]]
Families = dict[str, Any]  # one group's heuristic tuning: "best" (the families' best), "blocking" (each member's), "reference"


class FamilyTunings:
    """The heuristic families' tuning of each group of regimes (:func:`_families`), kept in a JSON file by what their
    streams depend on (:func:`group_digest`), so that every stage of a recipe, and every resume, tunes a group once:
    the distil stage scores its candidates beside the clone's tuning instead of running every family again. A group is
    saved as soon as it is tuned. ``path`` None: kept in memory only."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._kept: dict[str, Families] = {}
        if path is not None and path.exists():
            try:
                saved = json.loads(path.read_text())
                self._kept = {str(k): v for k, v in saved.items() if {"best", "blocking", "reference"} <= set(v)}
            except (OSError, ValueError, TypeError, AttributeError):
                self._kept = {}  # not one we wrote: tuned again

    def get(self, digest: str) -> Families | None:
        return self._kept.get(digest)

    def put(self, digest: str, families: Families) -> None:
        self._kept[digest] = families
        if self.path is not None:
            write_atomic(self.path, json.dumps(self._kept) + "\n")


def cluster_sources(clusters: Sequence[str]) -> dict[str, str]:
    """Each cluster's name -> what loads it (a preset's name, or a cluster file's path): regimes and an env's ``reset``
    info name a cluster file by the name inside it, which :func:`~placer.cluster.topology.load_cluster` cannot read."""
    return {load_cluster(source).name: source for source in clusters}


def group_digest(config: EnvConfig, rows: Sequence[Regime], teacher: str = "best") -> str:
    """sha256 of what a group's tuning streams and runs depend on: each regime and its workload, the clusters, the
    strategy, the largest degree and the family members ``best`` weighs (not the observation, the reward or the
    candidates)."""
    parts = [config.strategy, config.max_degree, *(row.key for row in rows), *_best(config, len(rows), teacher).candidates]
    parts += [variant_of(config, row).workload.model_dump_json() for row in rows]
    sources = cluster_sources(config.all_clusters)
    parts += [load_cluster(sources.get(name, name)).spec.model_dump_json() for name in dict.fromkeys(row.cluster for row in rows)]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _scored(
    config: EnvConfig,
    rows: Sequence[Regime],
    candidates: Sequence[str] = (),
    policy_file: str | None = None,
    families: Families | None = None,
    teacher: str = "best",
) -> tuple[Scored, Families]:
    """The heuristic families' best in the regimes ``rows`` (the member ``best`` runs in one; pooled over several, the one
    with the least mean avoidable blocking over all of them, as ``single-best`` chooses) and the mean avoidable blocking on
    their tuning streams of every family member and of each of ``candidates``: more policies (any registered name, e.g.
    ``learned``, which runs ``policy_file`` when given) scored on the same streams, of which :func:`chosen_member` makes one
    the member where it leads; and each candidate's lead: the families' best's avoidable blocking less the candidate's, per
    tuning stream of every regime of ``rows`` (paired: the same stream and seed), as a mean and its 95 % half-width.
    With it, the families' tuning: ``families`` when given (a :class:`FamilyTunings` record of the same group), so that
    only the candidates run; else measured here. ``teacher``: ``best``, or ``elastic-best`` (the elastic families, run
    elastic)."""
    clusters = {cluster.name: cluster for cluster in map(load_cluster, config.all_clusters)}  # rows name clusters as reset's info does
    costs = {name: CostModel(clusters[name], strategy=config.strategy) for name in dict.fromkeys(row.cluster for row in rows)}
    workloads = [variant_of(config, row).workload for row in rows]
    graphs = {names: [resolve_graph(g) for g in names] for names in dict.fromkeys(w.graphs for w in workloads)}  # read once
    tunings = tuple(  # rows of one cluster share its cost model's caches, and one setting's rows its graphs
        _tuning(row, w, costs[row.cluster], graphs[w.graphs]) for row, w in zip(rows, workloads, strict=True)
    )
    for tuning in tunings:
        tuning.regimes = tunings if len(tunings) > 1 else ()
    families = dict(families or _families(config, tunings, teacher))
    family_best, blocking, leads = str(families["best"]), dict(families["blocking"]), {}
    reference = list(families["reference"])
    context = candidate_context(clusters[rows[0].cluster], config.max_degree, policy_file)
    kept = families["candidates"] = dict(families.get("candidates", {}))  # NAME@sha256 -> per regime, per stream
    for name in candidates:
        key = _candidate_key(name, policy_file)
        runs = kept.get(key) if key else None
        if runs is None:
            policy = make_policy(name, context)
            runs = [[float(v) for v in tuning.per_stream(policy, TUNING_METRIC)] for tuning in tunings]
            if key:
                kept[key] = runs  # saved with the group: a resume, or another margin, scores it once
        blocking[name] = float(np.mean([float(np.mean(run)) for run in runs]))  # each regime weighted alike
        leads[name] = mean_ci95([a - b for a, b in zip(reference, [value for run in runs for value in run], strict=True)])
    return (family_best, blocking, leads), families


def _candidate_key(name: str, policy_file: str | None) -> str | None:
    """What a candidate's scores on a group are kept under: a heuristic's name, or ``learned@`` the content of the policy
    file it runs; None (not kept) for any other learned policy, whose file may change under its name."""
    if name.split(":", 1)[0].split("+", 1)[0].split("@", 1)[0] != "learned":
        return name
    return f"learned@{file_sha256(Path(policy_file))}" if name == "learned" and policy_file else None


def _families(config: EnvConfig, tunings: Sequence[Tuning], teacher: str) -> Families:
    """The heuristic families' tuning on ``tunings`` (a group's regimes): ``teacher`` chooses its member ("best"), every
    member's mean avoidable blocking ("blocking") and the chosen one's per tuning stream of every regime ("reference")."""
    best = _best(config, len(tunings), teacher)
    tuned = best.tuned(tunings[0])
    chosen = str(tuned.chosen)
    reference = [float(v) for tuning in tunings for v in tuning.per_stream(best.candidates[chosen], TUNING_METRIC)]  # cached
    return {"best": chosen, "blocking": {k: float(v) for k, v in (tuned.tuning_blocking or {}).items()}, "reference": reference}


def _best(config: EnvConfig, regimes: int, teacher: str = "best") -> Best:
    """``teacher`` (``best`` or ``elastic-best``) for ``config``'s largest degree, choosing on one regime or pooled over
    several (``best``'s pooled form is ``single-best``)."""
    kind = PolicySpec.parse(teacher, plugins={}).kind
    name = "single-best" if kind == "best" and regimes > 1 else kind
    best = make_heuristic(PolicySpec.parse(name, plugins={}), max_degree=config.max_degree)
    if not isinstance(best, Best):
        raise TypeError(f"{teacher} built a {type(best).__name__}")
    return dataclasses.replace(best, pooled=regimes > 1)


def candidate_context(cluster: Cluster, max_degree: int, policy_file: str | None) -> PolicyContext:
    """What a teacher candidate is built with: the cluster, and the policy file a plain ``learned`` runs (None: the shipped)."""
    return PolicyContext(cluster, max_degree, Path(policy_file) if policy_file else None)


def tune_regime(
    config: EnvConfig,
    rows: Sequence[Regime],
    candidates: Sequence[str] = (),
    margin: float = 0.0,
    policy_file: str | None = None,
    resolved: bool = False,
) -> tuple[str, dict[str, float]]:
    """The member of the regimes ``rows`` and every candidate's score, as :func:`_scored` scores them and
    :func:`chosen_member` chooses."""
    (family_best, blocking, leads), _ = _scored(config, rows, candidates, policy_file)
    return chosen_member(family_best, blocking, candidates, margin, leads if resolved else None), blocking


def chosen_member(
    family_best: str, blocking: Mapping[str, float], candidates: Sequence[str], margin: float = 0.0, leads: Mapping[str, Lead] | None = None
) -> str:
    """The candidate that blocks least (the first of equals) if it blocks less than (1 - ``margin``) x ``family_best``'s
    ``blocking`` (``margin`` >= 0) and, where ``leads`` are given, its paired lead's 95 % interval lies above 0; else
    ``family_best``."""
    bar = (1.0 - margin) * blocking[family_best]
    leading = [name for name in candidates if blocking[name] < bar and (leads is None or leads[name][0] - leads[name][1] > 0)]
    return min(leading, key=blocking.__getitem__) if leading else family_best


def _tuning(regime: Regime, workload: WorkloadSpec, cost: CostModel, graphs: list[JobGraph]) -> Tuning:
    """The tuning streams of one regime of ``workload`` (as ``placer evaluate`` draws them) on ``cost``'s cluster."""
    beta, queue = _by_spec(workload.betas, regime.beta_dist), _by_spec(workload.queues, regime.queue)
    size, structure = _by_spec(workload.sizes, regime.size), _by_spec(workload.structures, regime.structure)
    load = regime.load
    if load is None:
        raise EnvConfigError(f"the regime {regime.key!r} is pooled over loads: it has no tuning streams of its own")
    stream = workload.stream(graphs, beta, cost.cluster.num_devices, cost.sequential_iteration_s, size, structure, load)
    return Tuning(cost, queue, stream.jobs, beta.stream_key, load=load)


def _by_spec(items: Sequence[T], spec: str) -> T:
    """The parsed item (beta distribution, queue, size, structure) whose ``spec`` is ``spec``."""
    return next(item for item in items if item.spec == spec)


def _score_group(args: tuple[EnvConfig, list[Regime], tuple[str, ...], str | None, Families | None, str]) -> tuple[Scored, Families]:
    return _scored(*args)


def regime_members(
    config: EnvConfig,
    *,
    pooled: Sequence[str] = (),
    candidates: Sequence[str] = (),
    margin: float = 0.0,
    resolved: bool = False,
    workers: int = 1,
    progress: bool = False,
    scores: dict[str, dict[str, float]] | None = None,
    ray: str | None = None,
    policy_file: str | None = None,
    tuned: FamilyTunings | None = None,
    teacher: str = "best",
) -> dict[str, str]:
    """:attr:`Regime.key` -> the member ``best`` chose for it, for every regime of ``config`` (``workers`` processes, or
    Ray tasks on the cluster at ``ray``).

    ``pooled``: regime fields (of :data:`REGIME_FIELDS`) the choice is not made per value of but pooled over, e.g.
    ``("beta_dist", "structure")``: one member per cluster and load, the least avoidable blocking over every beta
    distribution and structure at that load (a table a student that reads the load but not the deadlines' distribution
    can follow without contradictions). ``candidates``, ``margin``, ``policy_file``, ``resolved``: as for :func:`tune_regime`.
    ``scores``, if given, receives for each group (the key of its first regime, pooled fields as ``*``) the avoidable
    blocking of the heuristic families' best and of each candidate, and each candidate's paired lead (``NAME lead`` and
    ``NAME lead half``: :func:`_scored`). ``tuned``: the families' tunings already made (e.g. by an earlier stage on the
    same streams); the groups it lacks are tuned and added, each as soon as it is done. ``teacher``: whose members,
    ``best``'s or ``elastic-best``'s."""
    unknown = set(pooled) - set(REGIME_FIELDS)
    if unknown:
        raise ValueError(f"cannot pool a teacher over {', '.join(sorted(unknown))} (regime fields: {', '.join(REGIME_FIELDS)})")
    groups: dict[Regime, list[Regime]] = {}
    for row in regimes(config):
        groups.setdefault(row.pooled(pooled), []).append(row)
    tuned = tuned or FamilyTunings()
    digests = [group_digest(config, rows, teacher) for rows in groups.values()]
    jobs = [(config, rows, tuple(candidates), policy_file, tuned.get(d), teacher) for rows, d in zip(groups.values(), digests, strict=True)]
    bar = dict(total=len(jobs), desc="tuning best per regime", unit="regime", disable=bar_off(progress), leave=False)
    scored: list[Scored] = []
    for digest, (score, families) in zip(digests, tqdm(_mapped(_score_group, jobs, workers, ray), **bar), strict=True):
        tuned.put(digest, families)  # kept now: a run stopped later does not tune this group again
        scored.append(score)
    members: dict[str, str] = {}
    for (group, rows), (family_best, blocking, leads) in zip(groups.items(), scored, strict=True):
        member = chosen_member(family_best, blocking, candidates, margin, leads if resolved else None)
        members.update((row.key, member) for row in rows)
        if scores is not None:
            scores[group.key] = {family_best: blocking[family_best], **{name: blocking[name] for name in candidates}}
            for name in candidates:
                scores[group.key] |= {f"{name} lead": leads[name][0], f"{name} lead half": leads[name][1]}
    return members


def _mapped(function: Callable[[Any], Any], items: Sequence[Any], workers: int, ray: str | None = None) -> Iterator[Any]:
    """``function`` of each item, in order, each yielded as soon as it and those before it are done (``workers`` > 1:
    spawned processes; ``ray``: Ray tasks on that cluster)."""
    with results_in_order(function, ((item,) for item in items), workers=workers, ray=ray) as results:
        yield from results


class Teachers:
    """The teacher of each episode: the heuristic ``teacher``, or for ``best`` the member tuned for the episode's regime
    (``members``: :func:`regime_members`' table). Policies are offered jobs in the env's queue order (no discipline).
    ``clusters``: the env's (its ``all_clusters``), where a candidate member runs on a cluster file."""

    def __init__(
        self,
        teacher: str,
        max_degree: int,
        members: Mapping[str, str] | None = None,
        policy_file: str | None = None,
        clusters: Sequence[str] = (),
    ) -> None:
        self.sources = cluster_sources(clusters)  # the env's clusters (its all_clusters), for a candidate's episodes
        self.spec = PolicySpec.parse(teacher, plugins={}).replace(discipline=None)
        self.max_degree = max_degree
        self.members = {regime.key: name for regime, name in parse_table(members or {}, "the teacher's table").items()}
        self.policy_file = policy_file  # the file a `learned` member runs (teacher_candidates' candidate_policy_file)
        if self.per_regime and not self.members:
            raise ValueError(f"the teacher {teacher!r} needs its table of regime -> member (regime_members)")
        self._built: dict[str, Policy] = {}

    @property
    def per_regime(self) -> bool:
        return self.spec.kind in REGIME_TEACHERS

    def for_episode(self, info: Mapping[str, Any]) -> Policy:
        """The policy that demonstrates the episode whose ``reset`` info is ``info``."""
        name = self.members[Regime.from_info(info).key] if self.per_regime else str(self.spec)
        if name not in self._built:
            spec = PolicySpec.parse(name).replace(discipline=None)
            if spec.kind in HEURISTIC_KINDS:
                self._built[name] = make_heuristic(spec, max_degree=self.max_degree)
            else:  # a candidate beside the heuristics (teacher_candidates): a plug-in's policy, on the episode's cluster
                cluster = load_cluster(self.sources.get(str(info["cluster"]), str(info["cluster"])))
                context = candidate_context(cluster, self.max_degree, self.policy_file)
                self._built[name] = make_policy(spec, context)
        return self._built[name]


OBSERVATION_FIELDS = (
    *("history", "meter", "advisers", "reward", "baseline", "baseline_discount", "baseline_arrival_discount"),
    *("elastic", "resize_offers"),  # resize offers: the teacher's streams and runs are the same (and tables tuned before them serve)
)
# [env] fields that change what the student sees, decides or earns, not the streams a teacher is tuned on: a table tuned for
# one config serves another that differs only in these (copy members.json into the new run's folder)


def teacher_members(config: TrainConfig, out: Path, progress: bool, tuned: FamilyTunings | None = None) -> dict[str, str] | None:
    """For a teacher tuned per regime (``best``) whose table is needed (a warm start, or ``ppo_baseline``): regime -> member,
    tuned once and kept in ``out/members.json`` with the config it was tuned for (a resume reads it back; another
    config's table, after ``--force``, or a file that is not one is tuned again); else None. ``tuned``: the heuristic
    families' tunings kept so far (:class:`FamilyTunings`): a group tuned before, by this run or another stage on the same
    streams, is not tuned again (only the candidates run)."""
    settings = config.train
    needed = (settings.imitation_steps and not settings.init_policy) or settings.ppo_baseline
    if not (needed and tuned_per_regime(settings.imitation_teacher)):
        return None
    path = out / "members.json"
    env = config.env.model_dump(mode="json", exclude=set(OBSERVATION_FIELDS))
    tuned_for: dict[str, Any] = {"env": env, "teacher": settings.imitation_teacher, "pooled": settings.teacher_pooled}
    if settings.teacher_candidates:  # absent when there are none: the tables tuned before candidates existed still serve
        tuned_for["candidates"] = settings.teacher_candidates
        if settings.teacher_margin:
            tuned_for["margin"] = settings.teacher_margin
        if settings.teacher_resolved:
            tuned_for["resolved"] = True
        if settings.candidate_policy_file:  # by content: a retrained candidate is tuned again
            tuned_for["candidate_sha256"] = file_sha256(Path(settings.candidate_policy_file))
    try:
        saved = json.loads(path.read_text())
        if saved["tuned_for"] == tuned_for and all(isinstance(v, str) for v in saved["members"].values()):
            return dict(saved["members"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # none yet, another config's (--force), or not one we wrote: tune again
    scores: dict[str, dict[str, float]] = {}
    members = regime_members(
        config.env,
        pooled=settings.teacher_pooled,
        candidates=settings.teacher_candidates,
        margin=settings.teacher_margin,
        resolved=settings.teacher_resolved,
        workers=settings.eval_workers,  # tuning's scores do not depend on how many processes measure them
        ray=settings.ray,
        progress=progress,
        scores=scores,
        policy_file=settings.candidate_policy_file,
        tuned=tuned,
        teacher=settings.imitation_teacher,
    )
    write_atomic(path, json.dumps({"tuned_for": tuned_for, "members": members, "tuning": scores}, indent=1) + "\n")
    return members


def with_baseline(config: TrainConfig, members: dict[str, str] | None) -> TrainConfig:
    """``config`` whose environment is shaped by its teacher (``ppo_baseline``: each regime's member for ``best``) on each
    episode's own arrivals (:mod:`placer.envs.baseline`), and whose shaping, the teacher's or the config's own ``[env]
    baseline``, is exact for PPO's discount."""
    env = config.env
    if config.train.ppo_baseline:
        env = env.with_changes(baseline=members or config.train.imitation_teacher)
    if env.baseline is None:
        return config
    return config.model_copy(update={"env": env.with_changes(baseline_discount=config.ppo.gamma)})


def check_baseline_early(config: TrainConfig) -> None:
    """Refuse a baseline that the first episode would (a heuristic that needs tuning, a table short of a regime), or a teacher
    candidate that cannot be built, in one line."""
    check_heuristics(config.env)
    if config.train.teacher_candidates:  # each built once now: an unknown policy file is one line before any tuning
        context = candidate_context(load_cluster(config.env.all_clusters[0]), config.env.max_degree, config.train.candidate_policy_file)
        for name in config.train.teacher_candidates:
            make_policy(name, context)
    teacher = config.train.imitation_teacher
    if config.train.ppo_baseline and not tuned_per_regime(teacher):
        try:
            check_heuristics(config.env.with_changes(baseline=teacher))
        except PlacerError as exc:
            raise EnvConfigError(f"ppo_baseline: the teacher {teacher!r} cannot be the baseline ({exc})") from None
