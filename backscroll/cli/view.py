"""``backscroll view``: the store in a local web page."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from backscroll.cli._common import Home

if TYPE_CHECKING:
    from backscroll.view import Address


def register(app: typer.Typer) -> None:
    app.command()(view)


def view(
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 and ::1 (0: a free one).")
    ] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the address instead of opening a browser.")
    ] = False,
    home: Home = None,
) -> None:
    """Serve a local web view (timeline, search with pictures, control) until interrupted."""
    from backscroll.view import serve
    from base.errors import UsageError

    if not 0 <= port <= 65535:
        raise UsageError(f"--port: must be a port from 0 to 65535, not {port}")
    serve(home, port, partial(announce, browse=not no_open))


def announce(address: Address, *, browse: bool) -> None:
    """The address, and a browser opened on it where there is one and ``browse``."""
    typer.echo(f"Backscroll view at {address.url}")
    typer.echo("Only this address opens it; Ctrl+C stops it.")
    if browse:
        import webbrowser

        # Without a display Python finds no browser (it never picks a text one then).
        if not webbrowser.open(address.url):
            typer.echo("No browser here: open the address above in one on this machine.")
