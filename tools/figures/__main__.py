"""``python -m tools.figures [NAME ...] [--check] [--run]``, from the repository's root: a mistake is one line, exit 2."""

from __future__ import annotations

import sys

from rich.markup import escape

from placer.common.errors import PlacerError
from tools.figures import app, err_console


def main() -> None:
    try:
        app(prog_name="python -m tools.figures", standalone_mode=False)
    except PlacerError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
