"""Reading commands: search, timeline, show, status, log, verify."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from backscroll.cli._common import (
    App,
    Home,
    Json,
    Since,
    Until,
    emit_json,
    note_lag,
    open_store,
    window,
)

if TYPE_CHECKING:
    from query.moments import Moment


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
            help="Words (all must match, else one letter off in OCR'd text, else near "
            'misses), "phrases", prefix*. A word that starts with - goes after --: '
            "backscroll search -- -word"
        ),
    ],
    since: Since = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=1000, help="Most matches (moments) shown.")
    ] = 15,
    home: Home = None,
    json: Json = False,
) -> None:
    """Search what was on screen, best first; a window's near-identical frames as one match."""
    from query.render import search_text

    start, end = window(since, until)
    with open_store(home) as store:
        moments = store.moments(query, start=start, end=end, app=app, limit=limit)
        exact = bool(moments) and not (moments[0].hit.near_miss or moments[0].hit.fuzzy)
        why = None if exact else store.why_empty(start, end, app)
        note_lag(store)
    if json:
        emit_json(
            {
                "query": query,
                "start": start,
                "end": end,
                "app": app,
                "why_empty": why,
                "matches": [_moment_json(m) for m in moments],
            }
        )
    else:
        typer.echo(search_text(query, moments, start, end, app, why))


def timeline(
    since: Since = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 50,
    home: Home = None,
    json: Json = False,
) -> None:
    """Frames in time order, consecutive frames of one window grouped."""
    from query.render import timeline_text

    start, end = window(since, until)
    with open_store(home) as store:
        hits = store.timeline(start=start, end=end, app=app, limit=limit)
        why = None if hits else store.why_empty(start, end, app)
        note_lag(store)
    if json:
        emit_json(
            {
                "start": start,
                "end": end,
                "app": app,
                "why_empty": why,
                "frames": [_hit_json(h) for h in hits],
            }
        )
    else:
        typer.echo(timeline_text(hits, start, end, app, why))


def show(
    frame_id: Annotated[int, typer.Argument(metavar="ID", help="Frame id (from search).")],
    save: Annotated[
        Path | None, typer.Option("--save", help="Write the decrypted thumbnail.")
    ] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """A frame's full text and metadata; --save writes its decrypted thumbnail."""
    from base.errors import NotFoundError, UsageError
    from base.fs import write_file
    from query.render import show_text

    with open_store(home) as store:
        hit = store.get(frame_id)
        jpeg = store.thumbnail(hit) if save else None
    if save:
        if jpeg is None:
            raise NotFoundError(f"frame #{frame_id} has no readable thumbnail")
        try:
            write_file(save, jpeg)  # 0600, whatever the umask: it is decrypted
        except OSError as exc:
            raise UsageError(f"cannot write the thumbnail to {save}: {exc.strerror}") from None
    if json:
        emit_json(_hit_json(hit) | {"text": hit.text, "saved": str(save) if save else None})
    else:
        typer.echo(show_text(hit))
        if save:
            typer.echo(f"thumbnail written to {save}")


def status(home: Home = None, json: Json = False) -> None:
    """Daemon, capture, storage, trigger and encryption state."""
    from backscroll.status import collect, render

    with open_store(home) as store:
        info = collect(store)
    if json:
        emit_json(info.to_dict())
    else:
        typer.echo(render(info))


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

    from backscroll.actions import audit, crashed_runs
    from query.render import stamp

    start, _ = window(since, None)
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


def _moment_json(moment: Moment) -> dict[str, object]:
    """A search match: its best frame, then every frame's id and time (in time order), the
    times in the same form as ``when``."""
    import msgspec

    seen = {
        "frame_ids": moment.frame_ids,
        "seen": [f.when for f in moment.frames],
        "first_seen": moment.first_seen,
        "last_seen": moment.last_seen,
    }
    shown: dict[str, object] = msgspec.to_builtins(seen)
    return _hit_json(moment.hit) | shown


def _hit_json(hit: object) -> dict[str, object]:
    import msgspec

    data: dict[str, object] = msgspec.to_builtins(hit)
    data.pop("text", None)
    return data
