"""The ``backscroll`` command: thin commands over the library, one line per error."""

from __future__ import annotations

import sys

from backscroll.cli.app import app


def main() -> None:
    """Usage errors are typer's (one usage line, exit 2); every Backscroll error is one line
    on stderr and exit 1, never a traceback (locals would hold screen text and keys)."""
    from backscroll.errors import BackscrollError

    try:
        app()
    except BackscrollError as exc:
        print(f"backscroll: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["app", "main"]
