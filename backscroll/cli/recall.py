"""Commands that hand the memory to someone else: export (to a folder) and mcp (to an agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backscroll import contract
from backscroll.cli._common import App, Home, PassphraseFile, Since, Until, ask, open_store
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
    archive: Annotated[
        str | None,
        typer.Option("--archive", metavar="FILE", help=contract.ARCHIVE_OUT, show_default=False),
    ] = None,
    passphrase_file: PassphraseFile = None,
    home: Home = None,
) -> None:
    """Write a decrypted copy (text and thumbnails) to a new, owner-only folder; or, with
    --archive, the whole store to one file sealed under a passphrase, to move it."""
    from backscroll import answer
    from backscroll.export import check_format

    if archive is not None or passphrase_file is not None:
        given = {
            "--out": out is not None,
            "--format": format != "json",
            "--since": since is not None,
            "--until": until is not None,
            "--app": app is not None,
            "--query": query is not None,
            "--limit": limit is not None,
            "--no-thumbnails": not thumbnails,
        }
        _export_archive(archive, passphrase_file, [name for name, on in given.items() if on], home)
        return
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


def _export_archive(
    archive: str | None, passphrase_file: str | None, others: list[str], home: Path | None
) -> None:
    from rich.progress import Progress

    from backscroll import answer

    if archive is None:
        raise UsageError("--passphrase-file goes with --archive FILE")
    if passphrase_file is None:
        raise UsageError("--archive needs --passphrase-file PF, a file holding the passphrase")
    if others:
        raise UsageError(
            f"--archive writes the whole store: it takes no {', '.join(others)} (those choose "
            "what a folder export holds)"
        )
    request = ask(
        contract.ArchiveExportRequest,
        archive=archive,
        passphrase_file=passphrase_file,
    )
    with open_store(home) as store, Progress(transient=True) as bar:
        task = bar.add_task("archiving", total=None)
        result = answer.export_archive(
            store, request, progress=lambda n: bar.update(task, completed=n)
        )
    typer.echo(
        f"archived {result.events:,} event(s), {result.frames:,} frame(s) and "
        f"{result.thumbnails:,} thumbnail(s) to {result.path} ({result.bytes:,} bytes)"
    )
    if result.left_out:
        typer.echo(
            f"left out {result.left_out:,} deleted frame(s) whose purge had not completed",
            err=True,
        )
    if result.unreadable:
        typer.echo(
            f"{result.unreadable:,} event(s), text(s) or thumbnail(s) did not read and were "
            "left out (backscroll verify names them)",
            err=True,
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
