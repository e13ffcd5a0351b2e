"""Options and helpers every command shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from backscroll import contract
from base.errors import UsageError

if TYPE_CHECKING:
    import msgspec

    from backscroll.contract import Request
    from backscroll.store import MemoryStore

R = TypeVar("R", bound="Request")

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


def open_store(home: Path | None, *, write: bool = False, catch_up: bool = True) -> MemoryStore:
    """To read (writes nothing) or, ``write``, to change the store (``MemoryStore``)."""
    from backscroll.store import MemoryStore

    return MemoryStore(home, write=write, catch_up=catch_up)


def ask(kind: type[R], /, **arguments: Any) -> R:
    """The command's arguments as a request of the contract, checked by it."""
    return contract.parse(kind, arguments)


def reply(answer: msgspec.Struct, text: str, json: bool) -> None:
    """A read's answer: its JSON (the contract's shape) or its text."""
    typer.echo(contract.encode(answer) if json else text)


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


def note_lag(store: Any) -> None:
    """With a daemon holding the views, commands read them as they are: say how far behind."""
    if store.lag:
        typer.echo(
            f"note: the views are {store.lag:,} event(s) behind the log ({store.behind_why})",
            err=True,
        )
