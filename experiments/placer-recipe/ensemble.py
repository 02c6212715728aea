"""Several learned policies of one environment deciding together: is an ensemble of the recipe's RL winners (one per
draw) better than each, and than today's policy? (issue 50: the recipe's draws spread by 0.0045, all behind today's.)

    python experiments/placer-recipe/ensemble.py POLICY.pt POLICY.pt [...] --best REPORT --json OUT [--workers 2]

At each offer every member scores the open actions on the same observation (its own graph encoding); the ensemble
takes the action with the highest mean log-probability (a product of the members' distributions; ties to the first).
It runs on the 148 validation streams of ``--config``'s distil stage, as ``compare.py`` does, and writes a report whose
``rates`` hold ``ensemble`` and ``best`` (read from ``--best``, a ``compare.py`` report on the same streams), for
``pair_records.py``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from tqdm import tqdm

from placer.baselines.specs import PolicySpec
from placer.envs.action import action_mask, decision
from placer.envs.observation import observe
from placer.evaluate.runner import Runner, tasks
from placer.policies.loading import LearnedPolicy
from placer.policies.recipe import load_recipe
from placer.policies.validation import validation_configs


class Ensemble(LearnedPolicy):
    """The members' mean log-probability, argmax; every member must read the same observation (one env config)."""

    def __init__(self, paths: list[Path]) -> None:
        members = [LearnedPolicy.from_file(p) for p in paths]
        if any(m.env != members[0].env for m in members):
            raise SystemExit("the members were trained on different environments: their observations differ")
        super().__init__(members[0].policy, members[0].env, PolicySpec("learned"))
        self.members = members

    def choose(self, offer, history, advice=()):
        mask = action_mask(offer.options, self.env.max_degree, len(self.env.rules))
        if mask.sum() == 1:
            return decision(0, offer.options)
        total = np.zeros(len(mask))
        for member in self.members:
            encoding, graph = member._graph(offer.job)
            logits = member.actor.logits(encoding, observe(offer, history, self.env, graph, advice), mask).astype(float)
            open_logits = logits[mask]
            top = open_logits.max()
            total[mask] += open_logits - (top + np.log(np.exp(open_logits - top).sum()))
        total[~mask] = -np.inf
        return decision(int(np.argmax(total)), offer.options)


_ENSEMBLE: Ensemble | None = None


def _rates(paths: list[str], config_json: str, indices: list[int]) -> list[float]:
    """Blocking rates of the streams ``indices`` of one evaluation config (a worker builds the ensemble once)."""
    global _ENSEMBLE
    from placer.evaluate.config import EvaluationConfig

    if _ENSEMBLE is None:
        _ENSEMBLE = Ensemble([Path(p) for p in paths])
    config = EvaluationConfig.model_validate_json(config_json)
    runner = Runner(config, policies=[_ENSEMBLE])
    todo = tasks(config)
    return [runner.run(todo[i])[0]["blocking_rate"] for i in indices]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", type=Path)
    parser.add_argument("--config", type=Path, default=Path("experiments/placer-recipe/margin-0.toml"))
    parser.add_argument("--best", type=Path, required=True, help="a compare.py report on the same streams (its best rates)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    recipe = load_recipe(args.config, Path("runs/ensemble"))
    configs = list(validation_configs(recipe.distil.config.env, recipe.section.validation_episodes, "learned"))
    paths = [str(p) for p in args.policies]
    todo = [(c, i) for c, config in enumerate(configs) for i in range(len(tasks(config)))]
    chunks = [todo[w :: args.workers * 8] for w in range(args.workers * 8)]  # small chunks: the progress bar moves
    by_stream: dict[tuple[int, int], float] = {}
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=spawn) as pool, tqdm(total=len(todo), unit="stream") as bar:
        futures = {}
        for chunk in filter(None, chunks):
            for c in sorted({c for c, _ in chunk}):
                indices = [i for cc, i in chunk if cc == c]
                futures[pool.submit(_rates, paths, configs[c].model_dump_json(), indices)] = (c, indices)
        for future in as_completed(futures):
            c, indices = futures[future]
            by_stream.update({(c, i): r for i, r in zip(indices, future.result(), strict=True)})
            bar.update(len(indices))
    rates = [by_stream[key] for key in todo]
    best = json.loads(args.best.read_text())["rates"]["best"]
    if len(best) != len(rates):
        raise SystemExit(f"{args.best} holds {len(best)} streams, the ensemble ran {len(rates)}")
    report = {"members": paths, "mean_blocking": {"ensemble": float(np.mean(rates)), "best": float(np.mean(best))}}
    args.json.write_text(json.dumps({**report, "rates": {"ensemble": rates, "best": best}}, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
