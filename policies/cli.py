"""``placer train``: registered on the placer CLI through the ``placer.cli`` entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command()(train)


def train(
    config: Annotated[Path | None, typer.Option(help="training config TOML (see data/configs/; --keys lists its keys)")] = None,
    out: Annotated[Path | None, typer.Option(help="output folder: checkpoints, policy files, TensorBoard logs")] = None,
    timesteps: Annotated[int | None, typer.Option(help="total environment steps (default: the config's)")] = None,
    resume: Annotated[bool, typer.Option(help="continue from OUT/checkpoint.pt")] = False,
    force: Annotated[bool, typer.Option(help="start over in a non-empty OUT (its files are overwritten)")] = False,
    device: Annotated[str | None, typer.Option(help="PPO's network: auto (CUDA when present), cpu or cuda (default: the config's)")] = None,
    cluster: Annotated[
        str | None, typer.Option(help="a recipe only: train for this cluster (a preset or a cluster file) instead of the recipe's")
    ] = None,
    load: Annotated[str | None, typer.Option(help="with --cluster: the offered loads to train and validate at, e.g. 0.5,0.9,1.3")] = None,
    graphs: Annotated[str | None, typer.Option(help="with --cluster: the job graphs of the workload (comma-separated)")] = None,
    trace: Annotated[
        Path | None, typer.Option(help="with --cluster: arrival times from this replay CSV (placer import trace), its first 2/3")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="a recipe only: processes for tuning and validation, and RL seeds run at once (same policy for any)"),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(help="a recipe only: run its RL seeds, tuning and validation on this Ray cluster (HOST:PORT, or local)"),
    ] = None,
    promote: Annotated[
        Path | None, typer.Option(help="copy the final policy here only if it blocks no more jobs than its teacher's online rule")
    ] = None,
    keys: Annotated[bool, typer.Option("--keys", help="list every key a training config or recipe may set, and exit")] = False,
) -> None:
    """Train a placement policy: one run (the final policy in OUT/policy.pt, the best validated one in OUT/best.pt), or a
    recipe (a config with a recipe table, e.g. data/configs/placer.toml): clone, RL over several seeds, distil and a
    per-regime validation against best, each stage in its own folder of OUT; the policy that ships (the student or the RL
    winner, whichever validates better) in OUT/policy.pt and its card in OUT/card.json."""
    from placer.common.errors import ConfigError, UsageError
    from placer.policies.promotion import check_promote_target

    if keys:
        given = (config, out, timesteps, device, cluster, load, graphs, trace, workers, ray, promote)
        if any(v is not None for v in given) or resume or force:
            raise UsageError("--keys lists every key a config may set and takes no other option")
        from placer.policies.keys import keys_as_toml

        typer.echo(keys_as_toml())
        return
    if config is None or out is None:
        raise UsageError("placer train needs --config and --out (or --keys to list a config's keys)")

    if device is not None and device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"--device must be auto, cpu or cuda, got {device!r}")
    if promote is not None:
        check_promote_target(promote)  # before anything slow: a bad path is one line now, not after the run
    if (load or graphs or trace) and not cluster:
        raise ConfigError("--load, --graphs and --trace go with --cluster (train a recipe for your cluster)")
    from placer.policies.recipe import is_recipe

    if workers is not None and ray is not None:
        raise UsageError("--workers spreads over local processes, --ray over a Ray cluster: give one")
    if is_recipe(config):
        _train_recipe(config, out, timesteps, resume, force, device, (cluster, load, graphs, trace), (workers, ray), promote)
        return
    if workers is not None or ray is not None:
        raise ConfigError(
            f"--workers and --ray spread a recipe's stages (a config with a [recipe] table); {config} is not one: "
            "set its [train] eval_workers or ray"
        )
    if cluster is not None:
        raise ConfigError(f"--cluster trains a recipe (a config with a [recipe] table, e.g. data/configs/placer.toml); {config} is not one")
    _train_one(config, out, timesteps, resume, force, device, promote)


def _report(message: str) -> None:
    typer.echo(message, err=True)


def _train_recipe(
    config: Path,
    out: Path,
    timesteps: int | None,
    resume: bool,
    force: bool,
    device: str | None,
    mine: tuple[str | None, str | None, str | None, Path | None],
    spread: tuple[int | None, str | None],
    promote: Path | None,
) -> None:
    """``placer train`` of a recipe: its stages, for ``mine`` (--cluster, --load, --graphs, --trace) when its cluster is
    given, over ``spread`` (workers, Ray address); the product and its card."""
    from placer.policies.recipe import for_cluster, load_recipe, parse_loads, run_recipe

    changes = None
    cluster, load, graphs, trace = mine
    if cluster is not None:
        from placer.cluster.topology import load_cluster

        load_cluster(cluster)  # an unreadable cluster file is one line now
        changes = for_cluster(cluster, parse_loads(load) if load else None, graphs.split(",") if graphs else None, trace)
    if spread[1] is not None:
        out = out.resolve()  # every node of the Ray cluster reads and writes the stages' folders by this path
    recipe = load_recipe(config, out, changes)
    if device is not None:
        recipe = recipe.with_device(device)
    workers, ray = spread
    if ray is not None:
        from placer.common.on_ray import join

        ray = join(ray, log_to_driver=True)  # "local" started here: the stages' processes join it by its address
        _report(f"on the Ray cluster at {ray}")
    product = run_recipe(
        recipe, out, resume=resume, force=force, timesteps=timesteps, report=_report, promote=promote, workers=workers, ray=ray
    )
    typer.echo(f"wrote {product} and {out / 'card.json'}")


def _train_one(config: Path, out: Path, timesteps: int | None, resume: bool, force: bool, device: str | None, promote: Path | None) -> None:
    """``placer train`` of one config: the final policy, and the best validated one beside it."""
    from placer.policies.config import load_train_config
    from placer.policies.train import train as run_training

    settings = load_train_config(config)
    if device is not None:
        settings = settings.model_copy(update={"train": settings.train.model_copy(update={"device": device})})
    final = run_training(settings, out, timesteps=timesteps, resume=resume, force=force, report=_report, promote=promote)
    typer.echo(f"wrote {final}")
    best = out / "best.pt"
    if best.exists():
        typer.echo(f"wrote {best} (the policy file validation scored best; {final.name} is the last)")
