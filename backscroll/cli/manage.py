"""Commands that change the store: pause, resume, deny, config, clear, reindex, import."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from backscroll.cli._common import App, Home, Json, Since, emit_json, on_off, open_store, window
from base.clock import now_us
from base.errors import UsageError

deny_app = typer.Typer(
    help="Apps and titles that are never recorded.",
    no_args_is_help=False,
    invoke_without_command=True,
)


def register(app: typer.Typer) -> None:
    app.command()(pause)
    app.command()(resume)
    app.add_typer(deny_app, name="deny")
    app.command()(config)
    app.command()(clear)
    app.command()(reindex)
    app.command("import")(import_)


def pause(
    duration: Annotated[str | None, typer.Argument(help="30m, 2h, … (omit: until resumed)")] = None,
    toggle: Annotated[
        bool,
        typer.Option(
            "--toggle", help="Resume if paused, else pause: for a compositor's key binding."
        ),
    ] = False,
    home: Home = None,
) -> None:
    """Pause capture, optionally for a while."""
    from backscroll.actions import pause as pause_
    from backscroll.actions import pause_until
    from backscroll.actions import resume as resume_

    until = pause_until(duration)
    with open_store(home, write=True) as store:
        if toggle and store.state().pause.active(now_us()):
            resume_(store)
            typer.echo("capture resumed")
            return
        pause_(store, until)
    shown = f"until {until.astimezone():%H:%M}" if until else "until resumed"
    typer.echo(f"capture paused {shown}")


def resume(home: Home = None) -> None:
    """Resume capture."""
    from backscroll.actions import resume as resume_

    with open_store(home, write=True) as store:
        resume_(store)
    typer.echo("capture resumed")


@deny_app.callback()
def deny_default(ctx: typer.Context, home: Home = None) -> None:
    """Apps and titles that are never recorded (a case-insensitive substring match)."""
    if ctx.invoked_subcommand is None:
        deny_list(home)


@deny_app.command("list")
def deny_list(home: Home = None) -> None:
    """Show the deny list."""
    with open_store(home, write=True) as store:
        for pattern in store.config.deny_apps:
            typer.echo(pattern)


@deny_app.command("add")
def deny_add(pattern: str, home: Home = None) -> None:
    """Never record apps, windows or sites whose name, title or address contains PATTERN."""
    from backscroll.actions import deny

    with open_store(home, write=True) as store:
        deny(store, pattern, None)
    typer.echo(f"denied: {pattern}")


@deny_app.command("remove")
def deny_remove(pattern: str, home: Home = None) -> None:
    """Take PATTERN off the deny list."""
    from backscroll.actions import deny

    with open_store(home, write=True) as store:
        deny(store, None, pattern)
    typer.echo(f"no longer denied: {pattern}")


def config(
    trigger: Annotated[str | None, typer.Option(help="events or interval")] = None,
    interval: Annotated[
        float | None, typer.Option(help="Interval / idle fallback, seconds.")
    ] = None,
    poll: Annotated[float | None, typer.Option(help="Probe period, seconds (≥ 0.2).")] = None,
    min_interval: Annotated[
        float | None, typer.Option(help="Minimum gap between captures.")
    ] = None,
    redact: Annotated[str | None, typer.Option(help="on or off")] = None,
    encrypt_text: Annotated[str | None, typer.Option(help="on or off")] = None,
    encrypt_thumbnails: Annotated[str | None, typer.Option(help="on or off")] = None,
    cap: Annotated[int | None, typer.Option(help="Storage cap, MB.")] = None,
    retention: Annotated[int | None, typer.Option(help="Retention, days.")] = None,
    hotkey: Annotated[
        str | None, typer.Option(help="Pause hotkey, e.g. '<ctrl>+<alt>+m' ('' = off).")
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="Capture backend: auto, x11, wlroots or gnome.")
    ] = None,
    announce_accessibility: Annotated[
        str | None,
        typer.Option(help="on or off: tell apps to publish their text (AT-SPI IsEnabled)."),
    ] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Show the configuration, or change it (each change is an event in the log)."""
    changes: dict[str, Any] = {
        "trigger": trigger,
        "interval_seconds": interval,
        "poll_seconds": poll,
        "min_interval_seconds": min_interval,
        "redact": on_off(redact, "--redact"),
        "encrypt_text": on_off(encrypt_text, "--encrypt-text"),
        "encrypt_thumbnails": on_off(encrypt_thumbnails, "--encrypt-thumbnails"),
        "storage_cap_mb": cap,
        "retention_days": retention,
        "pause_hotkey": hotkey,
        "capture_backend": backend,
        "announce_accessibility": on_off(announce_accessibility, "--announce-accessibility"),
    }
    changes = {k: v for k, v in changes.items() if v is not None}
    with open_store(home, write=True) as store:
        current = store.set_config("cli", **changes) if changes else store.config
    data = current.to_dict()
    if json:
        emit_json(data)
        return
    for key, value in data.items():
        shown = ", ".join(value) if isinstance(value, list | tuple) else value
        typer.echo(f"{key}: {shown}")
    if changes and {"redact", "encrypt_text", "encrypt_thumbnails"} & changes.keys():
        typer.echo("new frames follow this now; run `backscroll reindex` to convert stored ones")


def clear(
    before: Annotated[str | None, typer.Option("--before", help="Everything before this.")] = None,
    since: Since = None,
    app: App = None,
    damaged: Annotated[
        bool,
        typer.Option("--damaged", help="Remove only the unreadable bytes kept aside (see verify)."),
    ] = False,
    yes: Annotated[bool, typer.Option("-y", "--yes", help="Do not ask for confirmation.")] = False,
    home: Home = None,
) -> None:
    """Delete frames (everything when no scope is given); returns when the purge is done."""
    from backscroll.actions import check_scope, delete
    from query.render import window_text

    if damaged:
        if before or since or app is not None:
            raise UsageError("--damaged takes no other scope")
        _clear_damaged(home, yes)
        return
    start, end = window(since, None, before)
    check_scope(start, end, app)
    scope = window_text(start, end) + (f", app~'{app}'" if app else "")
    if not yes:
        typer.confirm(f"Delete every frame in {scope}? This cannot be undone", abort=True)
    with open_store(home, write=True) as store:
        removed = delete(store, start=start, end=end, app=app)
    typer.echo(f"deleted {removed} frame(s) in {scope}")


def _clear_damaged(home: Path | None, yes: bool) -> None:
    from backscroll.actions import discard_damaged

    if not yes:
        typer.confirm(
            "Delete the unreadable bytes kept aside and the events that do not decode? "
            "They cannot be read by this version of Backscroll",
            abort=True,
        )
    with open_store(home, write=True) as store:
        done = discard_damaged(store)
    typer.echo(
        f"removed {done.files} damaged range(s) kept aside and {done.events} event(s) that "
        "did not decode"
    )


def reindex(
    views_only: Annotated[
        bool, typer.Option("--views-only", help="Only rebuild the views from the log.")
    ] = False,
    yes: Annotated[bool, typer.Option("-y", "--yes", help="Do not ask for confirmation.")] = False,
    home: Home = None,
) -> None:
    """Re-encrypt / decrypt / redact stored frames under the current config (or only rebuild
    the views); safe to interrupt and run again."""
    from rich.progress import Progress

    from backscroll.actions import rebuild_views
    from backscroll.reindex import reindex as rewrite

    if not views_only and not yes:
        typer.confirm("Rewrite every stored frame under the current config?", abort=True)
    with open_store(home, write=True, catch_up=False) as store, Progress(transient=True) as bar:
        task = bar.add_task("rebuilding views" if views_only else "rewriting frames", total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        if views_only:
            rebuild_views(store, step)
            typer.echo("views rebuilt")
            return
        counts = rewrite(store, progress=step)
    typer.echo("reindexed: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def import_(
    source: Annotated[
        str, typer.Argument(metavar="FILE|-", help="JSON Lines: ts, app, title, text.")
    ],
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Go on past malformed lines.")
    ] = False,
    home: Home = None,
) -> None:
    """Append frames from JSON Lines (ts, app, title, text, text_source, image, url)."""
    from rich.progress import Progress

    from backscroll.actions import import_frames

    if source != "-" and not Path(source).is_file():
        raise UsageError(f"no such file: {source}")
    # Bytes that are not UTF-8 reach the parser as surrogates, which refuses their line.
    stream = (
        io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
        if source == "-"
        else Path(source).open(encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    )
    with stream, open_store(home, write=True) as store, Progress(transient=True) as bar:
        task = bar.add_task("importing", total=None)
        result = import_frames(
            store, stream, skip_bad=skip_bad, progress=lambda n: bar.update(task, completed=n)
        )
    for line in result.skipped:
        typer.echo(f"skipped {line}", err=True)
    typer.echo(f"imported {result.imported} frame(s)")
