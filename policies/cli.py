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
        device: Annotated[
            str | None, typer.Option(help="PPO's network: auto (CUDA when present), cpu or cuda (default: the config's)")
        ] = None,
        promote: Annotated[
            Path | None, typer.Option(help="copy the final policy here only if it blocks no more jobs than its teacher's online rule")
        ] = None,
    ) -> None:
        """Train a placement policy with MaskablePPO; the final policy lands in OUT/policy.pt, the best validated one in OUT/best.pt."""
        from policies.config import load_train_config
        from policies.train import train as run_training

        def report(message: str) -> None:
            typer.echo(message, err=True)

        settings = load_train_config(config)
        if device is not None:
            from placer.common.errors import PlacerError

            if device not in ("auto", "cpu", "cuda"):
                raise PlacerError(f"--device must be auto, cpu or cuda, got {device!r}")
            settings = settings.model_copy(update={"train": settings.train.model_copy(update={"device": device})})
        final = run_training(settings, out, timesteps=timesteps, resume=resume, force=force, report=report, promote=promote)
        typer.echo(f"wrote {final}")
        best = out / "best.pt"
        if best.exists():
            typer.echo(f"wrote {best} (the policy file validation scored best; {final.name} is the last)")
