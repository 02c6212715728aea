"""The ``placer`` command's entry point, a module apart from the package so that a folder named placer cannot hide it.

pip's ``placer`` script runs ``from placer_launch import main; main()``. Were that ``from placer.cli import main``, a
folder named ``placer`` (or a file ``placer.py``) found first on ``sys.path`` would be imported in the package's place
and the script would end in a ``ModuleNotFoundError`` traceback before any of placer's code ran. A console script's
``sys.path`` starts with its own ``bin`` folder, not the current directory, so this happens where ``PYTHONPATH`` holds
``.`` or an empty entry (``PYTHONPATH=:$PYTHONPATH``, a leading colon, means the current directory). Then this module
says so in one line on stderr and exits with status 2. Where ``placer.cli`` still imports (an editable install finds
the package's modules whatever ``placer`` is), :func:`placer.cli.main` warns in one line and runs the command.

Not helped from here, as Python reaches none of placer's code: ``python -m placer`` beside a folder ``placer/`` with an
``__init__.py`` (Python imports that folder and says "No module named placer.__main__; 'placer' is a package and
cannot be directly executed"). A folder without ``__init__.py`` (a checkout named placer, say) shadows nothing in a
regular install: Python prefers a package with an ``__init__.py`` anywhere on the path to such a folder.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().with_name("placer")  # the package installed beside this module (wheel or checkout)


def shadow_line() -> str | None:
    """One line naming what ``import placer`` finds when that is not :data:`PACKAGE` (a folder or a file named placer
    earlier on ``sys.path``), else None (also when nothing named placer is found)."""
    try:
        spec = importlib.util.find_spec("placer")
    except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
        return None
    if spec is None:
        return None
    found = Path(spec.origin) if spec.origin else Path(next(iter(spec.submodule_search_locations or ()), "."))
    if found.name == "__init__.py":
        found = found.parent
    if found.resolve() == PACKAGE:
        return None
    what = f"a folder named placer ({found})" if found.is_dir() else f"a file named {found.name} ({found})"
    return (
        f"{what} shadows the installed package, so placer cannot start: run from another directory, "
        "rename it, or take its folder off PYTHONPATH"
    )


def main() -> None:
    """Run placer's command line (:func:`placer.cli.main`); when it cannot be imported because something else named
    placer is found first (:func:`shadow_line`), one line on stderr and exit status 2. Any other failure to import
    (placer's own) is raised as it is."""
    try:
        from placer.cli import main as run
    except Exception:
        line = shadow_line()
        if line is None:
            raise
        sys.stderr.write(f"error: {line}\n")
        raise SystemExit(2) from None
    run()
