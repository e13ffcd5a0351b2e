"""The commands a person types most, read without typer: ``status`` and ``search WORD``.

Importing typer with the click it vendors, and building the one command, cost about as much
as Python's own start (``bench/startup.py``). A command line that names one of the commands
below and holds nothing but its request's fields as ``--name value`` (or ``--name=value``),
its arguments by position, its flags, ``--home`` and ``--json``, each at most once, is read here and
run by the same body the typer command runs (``backscroll.cli._run``). Anything else (help,
``--``, a value that starts with -, a number that is not one, an option given twice, a
word of no option) is typer's to read and to word: ``command_for`` gives None.

What a command takes comes from its request in ``backscroll.contract``: the option names
are its field names, an ``int`` field's value is read as ``int()`` reads it (as click's
does), and defaults and limits are the request's. ``tests/test_quick_cli.py`` holds the
typer command of each name to the same options, types and defaults, and both ways of
reading a command line to the same output and exit code.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from backscroll import contract
from backscroll.cli import _run

if TYPE_CHECKING:
    from backscroll.contract import Request

# click's shell completion answers instead of running the command while this is set.
COMPLETE = "_BACKSCROLL_COMPLETE"


class Quick(NamedTuple):
    request: str
    """The name of the command's request in ``backscroll.contract``."""
    arguments: tuple[str, ...]
    """The request's fields given by position, in order."""
    run: Callable[[Any, Path | None, bool], None]
    """The body: the request, ``--home`` and ``--json``."""
    flags: Mapping[str, tuple[str, str]] = MappingProxyType({})
    """Options without a value that each set a field to one of its values (``--words``:
    ``by="words"``); two that set the same field are typer's to refuse."""


def _status(_: Request, home: Path | None, json: bool) -> None:
    _run.status(home, json)


QUICK = {
    "search": Quick(
        "SearchRequest",
        ("query",),
        _run.search,
        {"--words": ("by", "words"), "--meaning": ("by", "meaning")},
    ),
    "status": Quick("StatusRequest", (), _status),
}


def option(field: str) -> str:
    return "--" + field.replace("_", "-")


def kinds(request: type[Request]) -> dict[str, type]:
    """Each field of ``request`` that a command line can give, and the type its value is read
    as: ``int`` or ``str`` (a field of another type is left to typer)."""
    import msgspec

    readable = {}
    for field in msgspec.structs.fields(request):
        kind = _bare(field.type)
        if kind in (int, str):
            readable[field.name] = kind
    return readable


def _bare(kind: Any) -> Any:
    """``kind`` without its ``Annotated`` constraints and, for ``X | None``, without None."""
    if typing.get_origin(kind) is typing.Annotated:
        return _bare(typing.get_args(kind)[0])
    others = [each for each in typing.get_args(kind) if each is not type(None)]
    if typing.get_origin(kind) is not None and len(others) == 1:
        return _bare(others[0])
    return kind


def command_for(args: Sequence[str]) -> Callable[[], None] | None:
    """The command line ``args`` as a call of its command's body, or None where it is not
    one this module reads whole."""
    quick = QUICK.get(args[0]) if args else None
    if quick is None or COMPLETE in os.environ or any("\0" in arg for arg in args):
        return None
    request: type[Request] = getattr(contract, quick.request)
    fields = kinds(request)
    readable = {option(name): kind for name, kind in fields.items()}
    names = {option(name): name for name in fields}
    given: dict[str, Any] = {}
    positional: list[str] = []
    home: Path | None = None
    json = False
    seen: set[str] = set()
    rest = iter(args[1:])
    for arg in rest:
        if not arg.startswith("-"):
            positional.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name in seen or not name.startswith("--"):
            return None
        seen.add(name)
        if name == "--json" and not equals:
            json = True
            continue
        if name in quick.flags and not equals:
            field, choice = quick.flags[name]
            if field in given:
                return None
            given[field] = choice
            continue
        if name != "--home" and (name not in readable or names[name] in quick.arguments):
            return None
        if not equals:
            value = next(rest, "-")
        if value.startswith("-"):
            return None
        if name == "--home":
            if os.path.exists(value) and not os.access(value, os.R_OK):
                return None  # click's check of a path, worded by typer
            home = Path(value)
        else:
            try:
                given[names[name]] = readable[name](value)
            except ValueError:
                return None
    if len(positional) != len(quick.arguments):
        return None
    for name, value in zip(quick.arguments, positional, strict=True):
        kind = readable.get(option(name))
        if kind is None:
            return None
        try:
            given[name] = kind(value)
        except ValueError:
            return None

    def run() -> None:
        quick.run(contract.parse(request, given), home, json)

    return run
