"""The shipped policy's recipe: one command from nothing to a validated policy, its card and (optionally) its promotion.

    placer train --config data/configs/placer.toml --out runs/placer [--resume] [--promote data/policies/placer.pt]

A recipe config is a training config (:class:`placer.policies.config.TrainConfig`: the base every stage starts from) with a
``[recipe]`` table. Its stages are ordinary training runs (:func:`placer.policies.train.train`), each in its own folder under
``--out``, each taking its input from the one before (no policy file is an input of the recipe):

``clone/``
    the warm start: every heuristic family tuned per regime (``best``'s table, ``members.json``), its members' decisions
    recorded and cloned, then DAgger rounds; ``[recipe.clone]``'s tables are merged into the base.
``rl-seed{S}/``
    RL: PPO (the mission reward, anchored to the clone by ``anchor_kl``) from ``clone/policy.pt``, one run per seed of
    ``rl_seeds``; ``[recipe.rl]`` merged in. The winner is the seed whose validated best (``best.pt``) blocks least on the
    validation streams (apart from every training stream; every seed on the same streams, so the choice is paired).
``distil/``
    the student: ``best``'s table tuned again with the RL winner as a candidate member (``teacher_candidates =
    ["learned"]``, ``candidate_policy_file`` = the winner): it teaches the regimes where it blocks at least
    ``teacher_margin`` fewer avoidable jobs than every heuristic family on the tuning streams, by a lead whose paired
    interval lies above 0 (``teacher_resolved``); the families' best teaches the rest; ``[recipe.distil]``.

Then the student and the RL winner are validated against ``best`` regime by regime on the same streams, and the one that
ships is chosen (:mod:`placer.policies.product`): it is copied to ``policy.pt``, its rows to ``validation.json``, and
``card.json`` records the resolved stage configs, the commit, the seeds, the teacher's table, each stage's validation and
wall time, both candidates' figures and which ships. ``--promote`` copies that policy and its card only if it blocks
no more than ``best`` in any regime (every interval of best - it reaches 0) and, where the target already
holds a policy, no more than that one in any regime on the same streams (the card's ``against_incumbent``); the target,
and the policy there, are checked before any work. Every invocation's wall time counts (``wall.jsonl``). ``--resume``
skips finished stages (their ``stage.json``) and resumes the one in flight from its checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from placer.common.atomic import write_atomic
from placer.common.errors import ConfigError
from placer.common.tomlfile import merged, read_toml, validate
from placer.policies.config import TrainConfig
from placer.policies.product import RL_WINNER, STUDENT, choose_product, judged, regime_lines, validate_policy
from placer.policies.validation import RatesCache, RegimeRow
from placer.policies.wallclock import WALL, clock

RECIPE = "recipe"  # the table that makes a training config a recipe
CLONE, DISTIL = "clone", "distil"
CARD_VERSION = 3  # 2: wall_s counts every invocation (wall.jsonl); 3: product (the student and the RL winner, which ships)


class RecipeSection(BaseModel):
    """``[recipe]``: the RL seeds and each stage's changes to the base config (tables merged in, lists replaced)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rl_seeds: list[int] = Field([1, 2, 3], min_length=1, max_length=16, description="one RL stage per seed; the winner validates best")
    validation_episodes: int = Field(1, ge=1, description="streams per regime and beta distribution in the final, per-regime validation")
    clone: dict[str, Any] = Field({}, description="[recipe.clone]: tables merged into the base for the clone stage")
    rl: dict[str, Any] = Field({}, description="[recipe.rl]: tables merged into the base for each RL stage")
    distil: dict[str, Any] = Field({}, description="[recipe.distil]: tables merged into the base for the distil stage")


class Stage(BaseModel):
    """One training run of the recipe: its folder name under ``--out`` and its resolved config."""

    model_config = ConfigDict(frozen=True)
    name: str
    config: TrainConfig


class Recipe(BaseModel):
    """A recipe resolved for one ``--out``: its stages' configs name the files the earlier stages will write there."""

    model_config = ConfigDict(frozen=True)
    source: str
    section: RecipeSection
    clone: Stage
    rl: list[Stage]
    distil: Stage

    @property
    def stages(self) -> list[Stage]:
        return [self.clone, *self.rl, self.distil]

    def with_device(self, device: str) -> Recipe:
        """Every stage's PPO network on ``device`` (``auto``, ``cpu`` or ``cuda``)."""
        return self._each_stage(lambda config: config.train.model_copy(update={"device": device}))

    def with_spread(self, workers: int | None, ray: str | None = None) -> Recipe:
        """Every stage's tuning and validation over ``workers`` processes (``eval_workers``) or, given ``ray``, on that Ray
        cluster (``[train] ray``): the same results for any."""
        spread: dict[str, Any] = {"eval_workers": workers} if workers is not None else {}
        spread |= {"ray": ray} if ray is not None else {}
        return self._each_stage(lambda config: config.train.model_copy(update=spread))

    def _each_stage(self, train: Callable[[TrainConfig], Any]) -> Recipe:
        """The recipe with each stage's ``[train]`` replaced by ``train(config)``."""

        def moved(stage: Stage) -> Stage:
            return stage.model_copy(update={"config": stage.config.model_copy(update={"train": train(stage.config)})})

        return self.model_copy(update={"clone": moved(self.clone), "rl": [moved(s) for s in self.rl], "distil": moved(self.distil)})


def is_recipe(path: Path) -> bool:
    """Whether the training config at ``path`` (after its ``extends`` chain) has a ``[recipe]`` table."""
    return RECIPE in read_toml(path, what="training config", extends=True)


def for_cluster(
    cluster: str, loads: list[float] | None = None, graphs: list[str] | None = None, trace: Path | None = None
) -> dict[str, Any]:
    """The changes that train a recipe for one cluster of the user's (a preset or a cluster file): every stage's episodes
    on that cluster alone (the recipe's other settings, PAC-ML's loss system among them, dropped), at ``loads`` and on
    ``graphs`` where given (else the recipe's), with the arrival times of the replay CSV ``trace`` where given (windows of
    its first two thirds by time, ``part=train``, for every stage and its validation; the last third kept apart)."""
    env: dict[str, Any] = {"clusters": [cluster], "settings": [{}]}
    if loads:
        env["loads"] = list(loads)
    workload: dict[str, Any] = {"graphs": list(graphs)} if graphs else {}
    if trace is not None:
        workload["structure"] = [f"replay:{trace.resolve()}:part=train"]
    if workload:
        env["workload"] = workload
    return {"env": env}


def parse_loads(text: str) -> list[float]:
    """``"0.5,0.9,1.3"`` -> [0.5, 0.9, 1.3]: each an offered load (:func:`placer.workloads.generator.load_problem`: the
    one rule of every ``--load``), else one line."""
    from placer.workloads.generator import load_problem

    try:
        loads = [float(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--load {text!r}: comma-separated offered loads, e.g. 0.5,0.9,1.3") from None
    problems = [problem for problem in map(load_problem, loads) if problem]
    if problems:
        raise ConfigError(f"--load {text!r}: {problems[0]}")
    return loads


def load_recipe(path: Path, out: Path, changes: dict[str, Any] | None = None) -> Recipe:
    """The recipe at ``path`` resolved for ``out``: every stage's config validated now, so a mistake in any stage is one line
    before the first one runs. ``changes`` (e.g. :func:`for_cluster`'s) are merged into every stage after its own."""
    data = read_toml(path, what="training config", extends=True)
    section = validate(RecipeSection, data.pop(RECIPE, {}), source=f"{path}: [{RECIPE}]")
    clone_file = str(out / CLONE / "policy.pt")

    def stage(name: str, own: dict[str, Any], fixed: dict[str, Any]) -> Stage:
        config = validate(TrainConfig, merged(merged(merged(data, own), changes or {}), fixed), source=f"{path}: stage {name}")
        return Stage(name=name, config=config)

    clone = stage(CLONE, section.clone, {"train": {"timesteps": 0}})
    rl = [stage(f"rl-seed{s}", section.rl, {"train": {"seed": s, "init_policy": clone_file}}) for s in section.rl_seeds]
    winner_placeholder = str(out / "rl-winner.pt")
    distil = stage(DISTIL, section.distil, {"train": {"timesteps": 0, "candidate_policy_file": winner_placeholder}})
    if "learned" not in distil.config.train.teacher_candidates:
        raise ConfigError(f"{path}: [recipe.distil]: teacher_candidates must list 'learned' (the RL winner)")
    return Recipe(source=str(path), section=section, clone=clone, rl=rl, distil=distil)


def run_recipe(
    recipe: Recipe,
    out: Path,
    *,
    resume: bool = False,
    force: bool = False,
    timesteps: int | None = None,
    progress: bool = True,
    report: Callable[[str], None] | None = None,
    promote: Path | None = None,
    workers: int | None = None,
    ray: str | None = None,
) -> Path:
    """Run every stage not yet finished (module docstring) and return the policy file that ships (``out/policy.pt``).

    ``timesteps`` replaces the RL stages' budget. A non-empty ``out`` is refused unless ``resume`` or ``force`` (which
    starts every stage over). ``workers`` (default: the configs' ``eval_workers``) spreads what does not depend on how it
    is spread: the tuning and validation of every stage over that many processes, and the RL seeds, up to that many at
    once, each in its own process; the policy is the same for any count (the imitation recording's ``imitation_workers``
    seed the teacher's episodes, so they stay the recipe's). ``ray`` (a Ray cluster's address, default: the configs' ``ray``)
    runs them there instead: the RL seeds all at once, and every stage's tuning, validation and recordings' worker
    shares, as Ray tasks (``out`` absolute, on a filesystem every node sees at the same path); the same policy again."""
    from placer.policies.promotion import check_incumbent, check_promote_target
    from placer.policies.train import prepare_out

    say = report or (lambda message: None)
    if promote is not None:
        check_promote_target(promote)
        check_incumbent(promote)
    recipe = recipe.with_spread(workers, ray)
    if recipe.distil.config.train.ray is not None and not out.is_absolute():  # the stages' configs name their inputs under it
        raise ConfigError(f"a recipe on Ray needs an absolute out folder (every node reads it), not {str(out)!r}")
    prepare_out(out, resume=resume, force=force)
    write_atomic(out / "recipe.json", recipe.model_dump_json(indent=1) + "\n")
    cache = RatesCache(out / "rates.json")  # best and the baselines validated once for every stage, and every resume
    options = StageOptions(out=out, resume=resume, force=force, progress=progress)
    with clock(out) as finish:  # an invocation cut short, even killed, counts too
        return _run_recipe(recipe, out, options, say, cache, timesteps, promote, workers, finish)


def _run_recipe(
    recipe: Recipe,
    out: Path,
    options: StageOptions,
    say: Callable[[str], None],
    cache: RatesCache,
    timesteps: int | None,
    promote: Path | None,
    workers: int | None,
    finish: Callable[[], dict[str, Any]],
) -> Path:
    """:func:`run_recipe`'s stages, validation, card and promotion, once ``out`` is prepared."""
    from placer.policies.promotion import promote_with_card

    records = {CLONE: run_stage(recipe.clone, options, say, cache)}
    rl_options = options.model_copy(update={"budget": timesteps, "table": out / CLONE / "members.json"})
    records |= run_stages(recipe.rl, rl_options, say, cache, workers or 1)
    names = [stage.name for stage in recipe.rl]
    choice = choose_rl_winner(out, names)
    write_atomic(out / "rl-winner.pt", (out / choice["winner"] / "best.pt").read_bytes())
    write_atomic(out / "rl.json", json.dumps(choice, indent=1) + "\n")
    say(f"RL winner: {choice['winner']} (validation blocking {choice['blocking'][choice['winner']]:.4f})")
    records[DISTIL] = run_stage(recipe.distil, options, say, cache)
    config, episodes = recipe.distil.config, recipe.section.validation_episodes
    files = {STUDENT: out / DISTIL / "policy.pt", RL_WINNER: out / "rl-winner.pt"}
    say("validating the student and the RL winner against best, regime by regime")
    candidates = {name: validate_policy(path, config, episodes, cache, progress=options.progress) for name, path in files.items()}
    chosen = choose_product(candidates)
    for name, validated in candidates.items():
        pooled = validated.pooled
        say(f"{name}: blocking {pooled.learned:.4f}, best {pooled.reference:.4f}, {validated.worse_regimes} regimes worse than best")
    product, validated = out / "policy.pt", candidates[chosen]
    write_atomic(product, files[chosen].read_bytes())
    write_atomic(out / "validation.json", json.dumps([r.model_dump() for r in validated.regimes], indent=1) + "\n")
    say(f"ships: the {chosen} ({product}), against best regime by regime:")
    for line in regime_lines(validated.regimes):
        say(line)
    say("validating the shipped policy on the same streams: the verdict weighs it too")
    serve, line, why, shipped = judged(validated, config, episodes, cache, _json(out / DISTIL / "members.json"), options.progress)
    line = line.replace("PATH", str(promote or product))
    say(textwrap.fill(f"verdict: serve {serve}{why}; the line that serves it:", 80, subsequent_indent="  "))
    say(f"  {line}")  # alone on its line: pasted as it stands
    incumbent = None
    if promote is not None and promote.exists():
        say(f"validating the policy against the one it would replace ({promote}), regime by regime")
        incumbent = validate_policy(product, config, episodes, cache, reference=promote, progress=options.progress).regimes
        for text in regime_lines(incumbent, reference=promote.name):
            say(text)
    card = make_card(recipe, out, records, choice, validated.regimes, finish())
    card["product"] = {"chosen": chosen, "candidates": {name: v.model_dump() for name, v in candidates.items()}}
    card["verdict"] = {"serve": serve, "command": line, "shipped": shipped.model_dump() if shipped is not None else None}
    card["workers"], card["ray"] = workers, recipe.distil.config.train.ray
    if incumbent is not None:
        card["against_incumbent"] = {"policy": str(promote), "regimes": [r.model_dump() for r in incumbent]}
    write_atomic(out / "card.json", json.dumps(card, indent=1) + "\n")
    if promote is not None:
        promote_with_card(product, out / "card.json", promote, validated.regimes, say, incumbent)
    return product


class StageOptions(BaseModel):
    """How :func:`run_stage` runs a stage: its recipe's ``out``, resume / force, progress bars, an RL budget that replaces
    the config's (``budget``) and the teacher table a stage tuned for the same streams starts from (``table``)."""

    model_config = ConfigDict(frozen=True)
    out: Path
    resume: bool = False
    force: bool = False
    progress: bool = True
    budget: int | None = None
    table: Path | None = None


def run_stage(stage: Stage, options: StageOptions, say: Callable[[str], None], cache: RatesCache) -> dict[str, Any]:
    """Train ``stage`` in ``out/<name>`` (skipped when resuming a finished one; resumed from its checkpoint when one was in
    flight) and return its record: name, wall seconds and training summary, also written to its ``stage.json``."""
    from placer.policies.train import train

    folder = options.out / stage.name
    done = folder / "stage.json"
    if options.resume and done.exists():
        say(f"[{stage.name}] finished in an earlier run: skipped")
        return dict(json.loads(done.read_text()))
    say(f"[{stage.name}] {folder}")
    again = options.resume and folder.is_dir() and any(folder.iterdir())
    table = options.table
    if table is not None and table.exists() and not again:  # best's table, tuned by the clone: a stage tuned for the same
        # streams reads it (placer.policies.teachers.teacher_members re-tunes one made for others)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "members.json", table.read_bytes())
    force = options.force or not again
    if force:
        (folder / WALL).unlink(missing_ok=True)  # started over: earlier invocations' time made nothing kept
    with clock(folder) as finish:  # cut short, even killed, it counts up to its last beat
        train(stage.config, folder, timesteps=options.budget, resume=again, force=force, progress=options.progress, report=say, cache=cache)
        wall = finish()
    record = {"stage": stage.name, "wall_s": wall["wall_s"], "invocations": wall["invocations"], "summary": _json(folder / "summary.json")}
    write_atomic(done, json.dumps(record, indent=1) + "\n")
    return record


def run_stages(
    stages: list[Stage], options: StageOptions, say: Callable[[str], None], cache: RatesCache, workers: int
) -> dict[str, dict[str, Any]]:
    """:func:`run_stage` for each of ``stages`` (independent of each other), up to ``workers`` at once in their own
    processes (no progress bars; each reports its lines prefixed by its name); in this process when ``workers`` is 1.
    Where their ``[train] ray`` names a Ray cluster, all at once as Ray tasks of one CPU there (their tuning and
    validation too): ``options.out`` absolute, and seen by its nodes at the same path."""
    ray = stages[0].config.train.ray if stages else None
    if ray is None and (workers <= 1 or len(stages) <= 1):
        return {stage.name: run_stage(stage, options, say, cache) for stage in stages}
    from placer.common.pool import results_in_order

    quiet = options.model_copy(update={"progress": False})
    spread = min(workers * len(stages), os.cpu_count() or 1)  # the stages' processes are all free for it now
    for stage in stages:  # what every stage validates against, measured once here rather than once in each process
        cache.warm(stage.config, spread)
    at_once = min(workers, len(stages))
    where = f"on the Ray cluster at {ray}" if ray is not None else f"up to {at_once} at once"
    say(f"{', '.join(stage.name for stage in stages)}: {len(stages)} stages, {where}")
    records: dict[str, dict[str, Any]] = {}
    with results_in_order(_stage_in_process, [(stage, quiet, cache) for stage in stages], workers=at_once, ray=ray) as done:
        for stage, record in zip(stages, done, strict=True):  # in stage order, so the records are too
            records[stage.name] = record
            say(f"[{stage.name}] finished in {record['wall_s']:.0f} s (its lines: {options.out / stage.name}.log)")
    return records


def _stage_in_process(stage: Stage, options: StageOptions, cache: RatesCache) -> dict[str, Any]:
    """:func:`run_stage` in a worker process, its lines on stderr prefixed by the stage's name and kept in ``OUT/NAME.log``
    (on Ray they reach the driver late, through Ray's log; not in its folder, which a resume reads as begun if not empty)."""
    import sys

    log = options.out / f"{stage.name}.log"

    def say(message: str) -> None:
        line = f"[{stage.name}] {message}" if not message.startswith("[") else message
        print(line, file=sys.stderr, flush=True)
        with log.open("a") as kept:
            kept.write(line + "\n")

    return run_stage(stage, options, say, cache)


def choose_rl_winner(out: Path, names: list[str]) -> dict[str, Any]:
    """The RL stage whose validated best blocked least (the lowest ``learned`` of its ``eval.jsonl``; the first of equals)."""
    from placer.policies.train import read_eval_rows

    blocking = {name: min(float(r["learned"]) for r in read_eval_rows(out / name / "eval.jsonl")) for name in names}
    return {"winner": min(names, key=blocking.__getitem__), "blocking": blocking}


def make_card(
    recipe: Recipe, out: Path, records: dict[str, Any], choice: dict[str, Any], rows: list[RegimeRow], wall: dict[str, Any]
) -> dict[str, Any]:
    """The policy's card: what made it (resolved configs, commit, seeds, teacher table), each stage's validation and wall
    time, and the per-regime figures against ``best``."""
    return {
        "format": "placer.card",
        "version": CARD_VERSION,
        "recipe": recipe.source,
        "command": f"placer train --config {recipe.source} --out {out}",
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "wall_s": wall["wall_s"],  # every invocation of the recipe (``--resume`` included), in seconds
        "invocations": wall["invocations"],
        "seeds": {"clone": recipe.clone.config.train.seed, "rl": recipe.section.rl_seeds, "distil": recipe.distil.config.train.seed},
        "rl": choice,
        "teacher_table": _json(out / DISTIL / "members.json"),
        "stages": records,
        "configs": {stage.name: stage.config.model_dump(mode="json") for stage in recipe.stages},
        "regimes": [r.model_dump() for r in rows],
        "no_worse_than_best_everywhere": all(r.not_worse for r in rows),
    }


def _json(path: Path) -> Any:
    """The JSON of ``path``, or None when the stage wrote none."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _commit() -> str | None:
    """The git commit the recipe ran from (a ``-dirty`` suffix when the tree had changes), or None outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=True).stdout
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit.strip() + ("-dirty" if dirty else "")
