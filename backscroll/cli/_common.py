"""Options and helpers every command shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from backscroll import contract
from backscroll.cli._run import ask, note_lag, open_store, reply
from base.errors import UsageError

# ask, note_lag, open_store and reply live in _run, which the quick parser imports without typer.
__all__ = [
    "App",
    "Home",
    "Json",
    "Since",
    "Until",
    "ask",
    "note_lag",
    "on_off",
    "open_store",
    "reply",
    "stamp",
]

Home = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="Store folder (default ~/.backscroll or $BACKSCROLL_HOME).",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
# The help of an option that is a request's argument is that argument's description in
# ``backscroll.contract``, as the MCP schemas give it (``tests/test_contract.py``).
Since = Annotated[str | None, typer.Option("--since", help=contract.SINCE)]
Until = Annotated[str | None, typer.Option("--until", help=contract.UNTIL)]
App = Annotated[str | None, typer.Option("--app", help=contract.APP)]
Cursor = Annotated[str | None, typer.Option("--cursor", help=contract.CURSOR)]
PassphraseFile = Annotated[
    str | None,
    typer.Option(
        "--passphrase-file", metavar="PF", help=contract.PASSPHRASE_FILE, show_default=False
    ),
]


def on_off(value: str | None, name: str) -> bool | None:
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    shown = repr(value) if len(value) <= 40 else repr(value[:39]) + "…"  # one short line
    raise UsageError(f"{name} takes on or off, not {shown}")


def stamp(when: datetime) -> str:
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
