"""Commands that hand the memory to someone else: export (to a folder) and mcp (to an agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backscroll.cli._common import App, Home, Since, Until, open_store, window
from base.errors import BackscrollError, UsageError

MAX_EXPORT = 100_000_000
"""``export --limit`` at most: far beyond a store's frames (a year of capture is ~1M)."""


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command()(mcp)


def export(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="A new or empty folder (default ~/Downloads/backscroll-memory-<time>).",
            show_default=False,
        ),
    ] = None,
    format: Annotated[
        str, typer.Option("--format", help="json (frames.json), csv (frames.csv) or html.")
    ] = "json",
    since: Since = None,
    until: Until = None,
    app: App = None,
    query: Annotated[
        str | None, typer.Option("--query", help="Only frames matching this search.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, max=MAX_EXPORT, help="At most this many frames.")
    ] = None,
    thumbnails: Annotated[
        bool,
        typer.Option("--thumbnails/--no-thumbnails", help="Include decrypted JPEG thumbnails."),
    ] = True,
    home: Home = None,
) -> None:
    """Write a decrypted copy (text and thumbnails) to a new, owner-only folder."""
    from backscroll.export import check_format
    from backscroll.export import export as export_

    check_format(format)
    start, end = window(since, until)
    with open_store(home) as store:
        result = export_(
            store,
            out,
            format,
            start=start,
            end=end,
            app=app,
            query=query,
            limit=limit,
            thumbnails=thumbnails,
        )
    typer.echo(
        f"exported {result.frames} frame(s) and {result.thumbnails} thumbnail(s) to {result.path}"
    )


def mcp(
    allow_manage: Annotated[
        bool,
        typer.Option(
            "--allow-manage",
            help="Also offer memory_manage (pause, resume, deny, config, delete, export).",
        ),
    ] = False,
    allow_export: Annotated[
        bool,
        typer.Option(
            "--allow-export",
            help="Let export run for clients that cannot ask you first (no elicitation).",
        ),
    ] = False,
    home: Home = None,
) -> None:
    """Serve the memory tools to an agent over stdio (Model Context Protocol)."""
    if allow_export and not allow_manage:
        raise UsageError("--allow-export needs --allow-manage (export is a memory_manage action)")
    try:
        from backscroll.mcp_server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise BackscrollError(
            "the mcp package is not installed; run: pip install 'backscroll[mcp]'"
        ) from None
    serve(home, allow_manage=allow_manage, allow_export=allow_export)
