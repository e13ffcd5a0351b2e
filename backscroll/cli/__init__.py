"""The ``backscroll`` command: thin commands over the library, one line per error.

``main`` runs ``status`` and ``search`` lines that ``quick`` reads whole without typer;
for any other line it builds only the command the line runs (``app_for``): each command
imports what it needs inside its body, so that importing this module loads no store, index,
cipher, picture or capture module, no other command's, and not typer.
"""

from __future__ import annotations

import gc
import io
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from backscroll.cli.quick import QUICK, command_for

if TYPE_CHECKING:
    import typer
    from typer._click.exceptions import UsageError

PROG = "backscroll"
# Escapes for the characters that would break the one line (str.splitlines splits at every
# one of them) or drive the terminal: C0 and C1 controls and the two Unicode separators.
_LINE_SAFE = {
    code: chr(code).encode("unicode_escape").decode("ascii")
    for code in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)
}


def main() -> None:
    """Every error is one line on stderr, ``backscroll: <message>``, never a traceback
    (locals would hold screen text and keys). Exit 2 for a usage error (an unknown option, a
    missing argument, a value of the wrong type), 1 for every other error and for a declined
    confirmation, 130 on Ctrl-C; a command's own ``typer.Exit(code)`` passes through."""
    _escape_unencodable_output()
    # A quick command runs for a tenth of a second and exits: the cycle collector's passes
    # over the objects its imports make (~40 of them, freeing ~480 objects in all) were 0.13x
    # Python's own start. Any other command (the daemon, the view's server) keeps it, and a
    # process that goes on once ``main`` returns (a test's) has it back.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _main(collecting)
    finally:
        if collecting:  # a process that goes on (a test's) collects again
            gc.enable()


def _main(collecting: bool) -> None:
    from base.errors import BackscrollError, DiskFullError, is_disk_full
    from base.home import resolve_home

    if sys.argv[1:2] and sys.argv[1] in QUICK:
        _msgspec_alone()
    quick = command_for(sys.argv[1:])
    if quick is None and collecting:
        gc.enable()
    global _ran_quickly
    _ran_quickly = quick is not None
    try:
        code = _typer_main() if quick is None else _quickly(quick)
    except BackscrollError as exc:
        _fail(str(exc), 1)
    except OSError as exc:
        # What a command did not turn into its own message (a file it was told to use):
        # still one line, a full disk said as such.
        if is_disk_full(exc):
            _fail(str(DiskFullError(resolve_home(None))), 1)
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}", 1)
    except KeyboardInterrupt:
        sys.exit(130)
    if isinstance(code, int) and code:
        sys.exit(code)


_ran_quickly = False
"""Whether the last ``main`` ran a command ``quick`` read."""


def console() -> None:
    """``backscroll``, the console script: ``main``, after which a quick command's process
    ends at once, its output flushed, without Python's finalization (which collected every
    cycle, freed every object, and waited for Tantivy's threads to stop and its files to be
    unmapped: 0.7x Python's own start of CPU after a search of 18 months). Nothing of a
    quick command is left to finish: its output is written and flushed line by line, and
    it writes nothing else. Tests run ``main`` within their own process, which goes on."""
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if not _ran_quickly:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            code = code or 120  # what Python's own exit gives output it cannot flush
    os._exit(code if isinstance(code, int) else 1)


def _msgspec_alone() -> None:
    """Import msgspec as it is where typing_extensions is not installed: it then resolves
    annotations with ``typing.get_type_hints``, which on this Python does for the contract's,
    the log's and the views' Structs what typing_extensions' would. typing_extensions
    imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``): 0.39x Python's own start,
    which a quick command paid for nothing. Anything imported later that wants it gets it."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # import fails
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def _typer_main() -> Any:
    """The command line run by typer: its parser's errors in the house's words."""
    import typer

    # typer (0.26 to 0.28) vendors click as typer._click: these, not the click package's own
    # classes, are what its parser raises.
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    from backscroll.cli.app import app_for

    application = app_for(sys.argv[1:])
    try:
        return application(prog_name=PROG, standalone_mode=False)
    except NoArgsIsHelpError as exc:
        # Without rich the help is the message; with rich it has already been printed.
        if exc.format_message():
            typer.echo(exc.format_message())
        _fail("missing command", exc.exit_code)
    except UsageError as exc:
        _fail(f"{_sentence(exc.format_message())} ({_hint(exc, application)})", exc.exit_code)
    except ClickException as exc:
        _fail(_sentence(exc.format_message()), exc.exit_code)
    except typer.Abort:
        _fail("aborted", 1)


def _quickly(command: Any) -> int:
    """A command ``quick`` read, as typer runs it: Ctrl-C is exit 130, and output that
    cannot be written because its reader has gone (a pipe to ``head``) ends it with exit 1
    and nothing said."""
    import errno

    try:
        command()
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # Python would flush the closed pipe again as it exits, and say so: what is left
        # goes nowhere (the way Python's documentation gives for SIGPIPE).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def _fail(message: str, code: int) -> NoReturn:
    print(f"{PROG}: {message.translate(_LINE_SAFE)}", file=sys.stderr)
    sys.exit(code)


def _sentence(message: str) -> str:
    """Click's "Missing argument 'query'." in the style of the other errors: "missing
    argument 'query'" (an initialism such as "ID" keeps its case)."""
    message = message.strip().removesuffix(".")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    return message


def _hint(exc: UsageError, application: typer.Typer) -> str:
    from typer._click.exceptions import NoSuchOption

    path, command = _command_of(exc, application)
    see = f"see {path} --help"
    short = isinstance(exc, NoSuchOption) and not exc.option_name.startswith("--")
    if short and any(param.param_type_name == "argument" for param in command.params):
        # `backscroll search -word` reads -word as the options -w, -o, …
        return f"a value that starts with - goes after --; {see}"
    return see


def _command_of(exc: UsageError, application: typer.Typer) -> tuple[str, Any]:
    """The command an error is about: its context's, or (the parser raises some errors, such
    as a missing option value, without one) the one the command line names."""
    if exc.ctx is not None:
        return exc.ctx.command_path, exc.ctx.command
    import typer.main

    path, command = [PROG], typer.main.get_command(application)
    for arg in sys.argv[1:]:
        sub = getattr(command, "commands", {}).get(arg)
        if sub is None:
            break
        path.append(arg)
        command = sub
    return " ".join(path), command


def _escape_unencodable_output() -> None:
    """Text from the command line can hold lone surrogates (a file name's bytes that are not
    UTF-8, decoded with surrogateescape) and a store can hold text the terminal's encoding
    cannot show: escape such characters, as Python's stderr already does, rather than fail
    after the command did its work."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


__all__ = ["console", "main"]
