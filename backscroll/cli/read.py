"""Reading commands: search, timeline, show, status, log, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from backscroll import contract
from backscroll.cli import _run
from backscroll.cli._common import (
    App,
    Cursor,
    Home,
    Json,
    Since,
    Until,
    ask,
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
    cursor: Cursor = None,
    words: Annotated[
        bool, typer.Option("--words", help="Find by the words alone, as typed.")
    ] = False,
    meaning: Annotated[
        bool, typer.Option("--meaning", help="Find by what the screens were about alone.")
    ] = False,
    home: Home = None,
    json: Json = False,
) -> None:
    """Search what was on screen by its words and its meaning; near-identical frames as one."""
    if words and meaning:  # a typo on the command line: typer's exit 2, as for any
        raise typer.BadParameter("--words and --meaning each choose one way: give one, or neither")
    by = "words" if words else "meaning" if meaning else "both"
    request = ask(
        contract.SearchRequest,
        query=query,
        since=since,
        until=until,
        app=app,
        limit=limit,
        cursor=cursor,
        by=by,
    )
    _run.search(request, home, json)


def timeline(
    since: Since = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[int, typer.Option("--limit", help=contract.TIMELINE_LIMIT)] = 50,
    cursor: Cursor = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Frames in time order, consecutive frames of one window grouped."""
    from backscroll import answer

    request = ask(
        contract.TimelineRequest, since=since, until=until, app=app, limit=limit, cursor=cursor
    )
    with open_store(home) as store:
        answered = answer.timeline(store, request)
        note_lag(store)
    reply(answered.answer, answered.text, json)


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
    _run.status(home, json)


def audit_log(
    since: Since = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help=contract.KIND)] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Control events newest first: the audit trail (scopes, never content)."""
    from backscroll import answer
    from query.render import stamp

    request = ask(contract.LogRequest, since=since, kind=kind)
    with open_store(home) as store:
        trail = answer.audit_log(store, request)
    if json:
        typer.echo(contract.encode(trail))
        return
    for entry in trail.events:
        shown = {k: v for k, v in entry.detail.items() if v not in (None, [], {}, "")}
        detail = "  ".join(f"{k}={v}" for k, v in shown.items())
        if entry.crashed:
            detail += " (crashed: no stop before the next start)"
        typer.echo(f"#{entry.offset:<6} {stamp(entry.time)}  {entry.kind:<9} {detail}")


def verify(home: Home = None, json: Json = False) -> None:
    """Check every segment, thumbnail and view against the log; exit 1 with a report."""
    from backscroll import answer

    with open_store(home) as store:
        checked = answer.verify(store)
    if json:
        typer.echo(contract.encode(checked))
    else:
        for problem in checked.problems:
            typer.echo(problem)
        typer.echo("healthy" if checked.healthy else f"{len(checked.problems)} problem(s)")
    if not checked.healthy:
        raise typer.Exit(1)
