"""``--promote``: where a trained policy may land, checked before any work, and the copy made only when it earned it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from placer.common.atomic import write_atomic
from placer.common.errors import PlacerError, TrainingError
from placer.policies.validation import PairedSummary, RegimeRow


def check_promote_target(target: Path) -> None:
    """Refuse, in one line and before any work, a ``--promote`` path that could not be written at the end: a folder, a file
    that cannot be replaced, or one whose nearest existing folder is not writable."""
    if target.is_dir():
        raise TrainingError(f"--promote {str(target)!r} is a folder: name the policy file to write")
    folder = next((p for p in (target.parent, *target.parent.parents) if p.exists()), Path("."))
    if not folder.is_dir():
        raise TrainingError(f"--promote {str(target)!r}: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target.parent, os.W_OK)):
        raise TrainingError(f"--promote {str(target)!r}: cannot write in {str(folder)!r}")


def promote_if_not_worse(final: Path, target: Path, summary: PairedSummary, report: Callable[[str], None]) -> None:
    """Copy ``final`` (and its paired summary) to ``target`` unless it resolvably blocks more jobs than its teacher's online rule."""
    if not summary.not_worse_than_reference():
        report(f"not promoted: the policy blocks more jobs than {summary.reference} (paired, 95 % interval); {target} is unchanged")
        return
    _write(target, final.read_bytes(), ".summary.json", (summary.model_dump_json(indent=1) + "\n").encode())
    report(f"promoted to {target}: no worse than {summary.reference} on the paired validation")


def check_incumbent(target: Path) -> None:
    """Refuse, in one line and before any work, a ``--promote`` target holding a policy that cannot be read: the recipe
    compares the policy it ships with the one it would replace (:func:`promote_with_card`)."""
    if not target.exists():
        return
    from placer.policies.loading import LearnedPolicy

    try:
        LearnedPolicy.from_file(target)
    except (PlacerError, OSError, ValueError) as exc:
        raise TrainingError(f"--promote {str(target)!r}: the policy there, which the new one must match, cannot be read: {exc}") from None


def promote_with_card(
    policy: Path,
    card: Path,
    target: Path,
    rows: list[RegimeRow],
    say: Callable[[str], None],
    incumbent: list[RegimeRow] | None = None,
) -> None:
    """Copy ``policy`` (a recipe's product) to ``target`` and its card beside it (``NAME.card.json``) if it is no worse
    than best in every regime (``rows``) and, where ``target`` already holds a policy, no worse than that one in every
    regime (``incumbent``: the policy against it on the same streams): a recipe never replaces a policy with one that
    blocks more anywhere."""
    worse = [r.regime for r in rows if not r.not_worse]
    if worse:
        say(f"not promoted: the policy blocks more than best in {len(worse)} regime(s): {'; '.join(worse)}; {target} is unchanged")
        return
    behind = [r.regime for r in incumbent or [] if not r.not_worse]
    if behind:
        say(f"not promoted: it blocks more than the policy at {target} in {len(behind)} regime(s): {'; '.join(behind)}")
        return
    _write(target, policy.read_bytes(), ".card.json", card.read_bytes())
    say(f"promoted to {target} (card beside it): no worse than best in any regime")


def _write(target: Path, policy: bytes, suffix: str, record: bytes) -> None:
    """Write ``policy`` to ``target`` and ``record`` beside it (``target`` with ``suffix``), each atomically; one line if not."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, policy)
        write_atomic(target.with_suffix(suffix), record)
    except OSError as exc:
        raise TrainingError(f"cannot promote to {str(target)!r}: {exc.strerror or exc}") from None
