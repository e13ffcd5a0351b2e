"""What the commands share that needs no typer: opening the store, asking the contract,
printing an answer, and the bodies of the commands the quick parser runs (``quick``), which
the typer commands of the same names run too.

Importing typer with the click it vendors costs about as much as Python's own start: a
command line that ``quick`` reads whole must reach the store without it.
"""

from __future__ import annotations

import codecs
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from backscroll import contract

if TYPE_CHECKING:
    import msgspec

    from backscroll.contract import Request, SearchRequest
    from backscroll.meaning_socket import Asker
    from backscroll.store import MemoryStore
    from query import TimeSpan
    from query.meaning import Asked

R = TypeVar("R", bound="Request")

# The one escape click's echo strips, when the output is no terminal (its ANSI styles).
_ESCAPE = "\x1b"


def echo(text: str, *, err: bool = False) -> None:
    """``typer.echo(text, err=err)``: the line, flushed. click's echo also strips ANSI styles
    from output that is no terminal and writes UTF-8 to a stream that says it is ASCII: text
    that could meet either goes through click's echo itself."""
    stream = sys.stderr if err else sys.stdout
    if _ESCAPE in text or _ascii(stream):
        import typer

        typer.echo(text, err=err)
        return
    stream.write(text + "\n")
    stream.flush()


def _ascii(stream: Any) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


def open_store(home: Path | None, *, write: bool = False, catch_up: bool = True) -> MemoryStore:
    """To read (writes nothing) or, ``write``, to change the store (``MemoryStore``)."""
    from backscroll.store import MemoryStore

    return MemoryStore(home, write=write, catch_up=catch_up)


def ask(kind: type[R], /, **arguments: Any) -> R:
    """The command's arguments as a request of the contract, checked by it."""
    return contract.parse(kind, arguments)


def reply(answer: msgspec.Struct, text: str, json: bool) -> None:
    """A read's answer: its JSON (the contract's shape) or its text."""
    echo(contract.encode(answer) if json else text)


def note_lag(store: Any) -> None:
    """With a daemon holding the views, commands read them as they are: say how far behind."""
    if store.lag:
        echo(
            f"note: the views are {store.lag:,} event(s) behind the log ({store.behind_why})",
            err=True,
        )


def search(request: SearchRequest, home: Path | None, json: bool) -> None:
    from backscroll import answer

    asker: list[Asker] = []
    with open_store(home) as store:

        def ask(query: str, span: TimeSpan) -> Asked | None:
            # The daemon keeps the model loaded: asked first, this process loads none. Its
            # client is imported only for a store with a meaning view (~4 ms a search).
            from backscroll.meaning_socket import Asker

            if not asker:
                asker.append(Asker(store.home))
            return asker[0](query, span)

        store.ask_meaning = ask
        answered = answer.search(store, request)
        note_lag(store)
    if asker and asker[0].problem:
        echo(f"note: {asker[0].problem}; the model was loaded here instead", err=True)
    reply(answered.answer, answered.text, json)


def status(home: Path | None, json: bool) -> None:
    from backscroll import answer

    with open_store(home) as store:
        answered = answer.status(store)
    reply(answered.answer, answered.text, json)
