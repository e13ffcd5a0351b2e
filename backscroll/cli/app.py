"""The typer application: each group in its own module, mounted here."""

from __future__ import annotations

import typer

from backscroll.cli.capture import register as register_capture
from backscroll.cli.first_run import register as register_first_run
from backscroll.cli.manage import register as register_manage
from backscroll.cli.read import register as register_read
from backscroll.cli.read import search
from backscroll.cli.recall import register as register_recall

# The parser reads `search -word` as the options -w, -o, …: say how to search for it.
SEARCH_EPILOG = "Put -- before a query that starts with -: backscroll search -- -word"

app = typer.Typer(
    name="backscroll",
    help="A local, private, searchable memory of what you saw on your screen.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)
register_capture(app)
register_first_run(app)
register_read(app)
register_manage(app)
register_recall(app)
for _info in app.registered_commands:
    if _info.callback is search:
        _info.epilog = SEARCH_EPILOG
