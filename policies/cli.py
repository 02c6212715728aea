"""``placer train``: registered on the placer CLI through the ``placer.cli`` entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def train(
        config: Annotated[Path, typer.Option(help="training config TOML (see data/configs/)")],
        out: Annotated[Path, typer.Option(help="output folder: checkpoints, policy files, TensorBoard logs")],
        timesteps: Annotated[int | None, typer.Option(help="total environment steps (default: the config's)")] = None,
        resume: Annotated[bool, typer.Option(help="continue from OUT/checkpoint.pt")] = False,
        force: Annotated[bool, typer.Option(help="start over in a non-empty OUT (its files are overwritten)")] = False,
    ) -> None:
        """Train a placement policy with MaskablePPO; the policy file lands in OUT/policy.pt."""
        from policies.config import load_train_config
        from policies.train import train as run_training

        def report(message: str) -> None:
            typer.echo(message, err=True)

        final = run_training(load_train_config(config), out, timesteps=timesteps, resume=resume, force=force, report=report)
        typer.echo(f"wrote {final}")
