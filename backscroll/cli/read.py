"""Reading commands: search, timeline, show, status, log, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backscroll import contract
from backscroll.cli._common import (
    App,
    Home,
    Json,
    Since,
    Until,
    ask,
    emit_json,
    note_lag,
    open_store,
    reply,
)


def register(app: typer.Typer) -> None:
    app.command()(search)
    app.command()(timeline)
    app.command()(show)
    app.command()(status)
    app.command("log")(audit_log)
    app.command()(verify)


def search(
    query: Annotated[
        str,
        typer.Argument(
            help=f"{contract.QUERY} A word that starts with - goes after --: "
            "backscroll search -- -word"
        ),
    ],
    since: Since = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[int, typer.Option("--limit", help=contract.SEARCH_LIMIT)] = 15,
    home: Home = None,
    json: Json = False,
) -> None:
    """Search what was on screen, best first; a window's near-identical frames as one match."""
    from backscroll import answer

    request = ask(
        contract.SearchRequest, query=query, since=since, until=until, app=app, limit=limit
    )
    with open_store(home) as store:
        answered = answer.search(store, request)
        note_lag(store)
    reply(*answered, json)


def timeline(
    since: Since = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[int, typer.Option("--limit", help=contract.TIMELINE_LIMIT)] = 50,
    home: Home = None,
    json: Json = False,
) -> None:
    """Frames in time order, consecutive frames of one window grouped."""
    from backscroll import answer

    request = ask(contract.TimelineRequest, since=since, until=until, app=app, limit=limit)
    with open_store(home) as store:
        answered = answer.timeline(store, request)
        note_lag(store)
    reply(*answered, json)


def show(
    frame_id: Annotated[int, typer.Argument(metavar="ID", help=contract.FRAME_ID)],
    save: Annotated[
        Path | None, typer.Option("--save", help="Write the decrypted thumbnail.")
    ] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """A frame's full text and metadata; --save writes its decrypted thumbnail."""
    from backscroll import answer
    from base.errors import NotFoundError, UsageError
    from base.fs import write_atomic

    request = ask(contract.ShowRequest, id=frame_id, include_image=save is not None)
    with open_store(home) as store:
        shown = answer.show(store, request)
    if save:
        if shown.jpeg is None:
            raise NotFoundError(f"frame #{frame_id} has no readable thumbnail")
        try:
            # A new file renamed over the path, 0600 whatever the umask (it is decrypted):
            # opened in place, a symbolic link there had its target overwritten.
            write_atomic(save, shown.jpeg)
        except OSError as exc:
            raise UsageError(f"cannot write the thumbnail to {save}: {exc.strerror}") from None
    reply(shown.answer, shown.text, json)
    if save and not json:
        typer.echo(f"thumbnail written to {save}")


def status(home: Home = None, json: Json = False) -> None:
    """Daemon, capture, storage, trigger and encryption state."""
    from backscroll import answer

    with open_store(home) as store:
        answered = answer.status(store)
    reply(*answered, json)


def audit_log(
    since: Since = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="Event kind (repeatable): "
            "config, pause, resume, delete, purged, reindex, rewritten, dstart, dstop, key.",
        ),
    ] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Control events newest first: the audit trail (scopes, never content)."""
    import msgspec

    from backscroll import answer
    from backscroll.audit import audit, crashed_runs
    from query.render import stamp

    start, _ = answer.time_span(since, None)
    with open_store(home) as store:
        events = audit(store, start, set(kind) if kind else None)
        crashed = crashed_runs(store)
    rows = []
    for offset, event in events:
        data = msgspec.to_builtins(event)
        if offset in crashed:
            data["crashed"] = True  # no stop before the next start: killed or crashed
        rows.append({"offset": offset, **data})
    if json:
        emit_json(rows)
        return
    from datetime import UTC, datetime

    for row in rows:
        when = datetime.fromtimestamp(row.pop("ts_us") / 1e6, UTC)
        kind_ = row.pop("k")
        row.pop("v", None)
        offset = row.pop("offset")
        note = " (crashed: no stop before the next start)" if row.pop("crashed", 0) else ""
        detail = "  ".join(f"{k}={v}" for k, v in row.items() if v not in (None, [], {}, ""))
        detail += note
        typer.echo(f"#{offset:<6} {stamp(when)}  {kind_:<9} {detail}")


def verify(home: Home = None, json: Json = False) -> None:
    """Check every segment, thumbnail and view against the log; exit 1 with a report."""
    from backscroll.verify import verify_store

    with open_store(home) as store:
        problems = verify_store(store)
    if json:
        emit_json({"healthy": not problems, "problems": problems})
    else:
        for problem in problems:
            typer.echo(problem)
        typer.echo("healthy" if not problems else f"{len(problems)} problem(s)")
    if problems:
        raise typer.Exit(1)
