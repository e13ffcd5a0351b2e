"""Commands that hand the memory to someone else: export (to a folder) and mcp (to an agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backscroll import contract
from backscroll.cli._common import App, Home, Since, Until, ask, open_store
from base.errors import BackscrollError, UsageError


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command()(mcp)


def export(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help=contract.FOLDER,
            show_default=False,
        ),
    ] = None,
    format: Annotated[str, typer.Option("--format", help=contract.FORMAT)] = "json",
    since: Since = None,
    until: Until = None,
    app: App = None,
    query: Annotated[str | None, typer.Option("--query", help=contract.MATCHING)] = None,
    limit: Annotated[int | None, typer.Option("--limit", help=contract.EXPORT_LIMIT)] = None,
    thumbnails: Annotated[
        bool,
        typer.Option("--thumbnails/--no-thumbnails", help=contract.THUMBNAILS),
    ] = True,
    home: Home = None,
) -> None:
    """Write a decrypted copy (text and thumbnails) to a new, owner-only folder."""
    from backscroll import answer
    from backscroll.export import check_format

    request = ask(
        contract.ExportRequest,
        since=since,
        until=until,
        app=app,
        path=str(out) if out is not None else None,
        format=check_format(format),
        query=query,
        limit=limit,
        thumbnails=thumbnails,
    )
    answer.time_span(request.since, request.until)  # a bad phrase is refused before the store opens
    with open_store(home) as store:
        result = answer.export(store, request)
    typer.echo(
        f"exported {result.frames} frame(s) and {result.thumbnails} thumbnail(s) to {result.path}"
    )
    if result.incomplete:
        typer.echo(f"incomplete: {result.incomplete}", err=True)


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
    allow_keep: Annotated[
        bool,
        typer.Option(
            "--allow-keep",
            help="Also offer kept_memory_write (keep, revise, forget kept memories).",
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
    serve(home, allow_manage=allow_manage, allow_export=allow_export, allow_keep=allow_keep)
