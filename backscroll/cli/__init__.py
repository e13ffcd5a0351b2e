"""The ``backscroll`` command: thin commands over the library, one line per error."""

from __future__ import annotations

import sys

from backscroll.cli.app import app


def main() -> None:
    from backscroll.errors import BackscrollError

    try:
        app(standalone_mode=False)
    except BackscrollError as exc:
        print(f"backscroll: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # click's usage errors and aborts
        import click

        if isinstance(exc, click.exceptions.Abort):
            print("backscroll: aborted", file=sys.stderr)
            sys.exit(1)
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


__all__ = ["app", "main"]
