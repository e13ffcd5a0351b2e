"""The typer application: each group in its own module, mounted here.

``app`` is the whole tree, as registered: cheap, a list of functions. What costs is typer
turning a command into a click command (reading its signature and every option's
annotations: 20–30 ms for the 21 commands before any of them ran), so a command line gets
``app_for``: an application of the one command it runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer
import typer.main

from backscroll.cli.capture import register as register_capture
from backscroll.cli.first_run import register as register_first_run
from backscroll.cli.glance import register as register_glance
from backscroll.cli.keep import register as register_keep
from backscroll.cli.manage import register as register_manage
from backscroll.cli.read import register as register_read
from backscroll.cli.read import search
from backscroll.cli.recall import register as register_recall
from backscroll.cli.view import register as register_view

# The parser reads `search -word` as the options -w, -o, …: say how to search for it.
SEARCH_EPILOG = "Put -- before a query that starts with -: backscroll search -- -word"


def _application() -> typer.Typer:
    return typer.Typer(
        name="backscroll",
        help="A local, private, searchable memory of what you saw on your screen.",
        no_args_is_help=True,
        pretty_exceptions_show_locals=False,
        add_completion=False,
    )


app = _application()
register_capture(app)
register_first_run(app)
register_read(app)
register_manage(app)
register_recall(app)
register_glance(app)
register_keep(app)
register_view(app)
for _info in app.registered_commands:
    if _info.callback is search:
        _info.epilog = SEARCH_EPILOG


def app_for(args: Sequence[str]) -> typer.Typer:
    """The application that runs the command line ``args``: only the command or group it
    names; the whole tree for anything else (no command, ``--help``, a name that is no
    command), which lists all of them or suggests one."""
    name = args[0] if args else None
    commands = [
        info
        for info in app.registered_commands
        if info.callback is not None
        and (info.name or typer.main.get_command_name(info.callback.__name__)) == name
    ]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        return app
    one = _application()
    one.registered_commands = commands
    one.registered_groups = groups
    # Alone, a command would be run as the program itself (`backscroll --json` for
    # `backscroll status --json`): a root callback keeps the root a group of one.
    one.callback()(_root)
    return one


def _root() -> None:
    """A local, private, searchable memory of what you saw on your screen."""
