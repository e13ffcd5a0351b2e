"""Commands that change the store: pause, resume, deny, config, clear, reindex, import."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from backscroll import contract
from backscroll.cli._common import (
    App,
    Home,
    Json,
    PassphraseFile,
    Since,
    ask,
    on_off,
    open_store,
)
from base.clock import now_us
from base.errors import UsageError

if TYPE_CHECKING:
    from rich.progress import Progress

    from backscroll.store import MemoryStore

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
    duration: Annotated[str | None, typer.Argument(help=contract.DURATION)] = None,
    toggle: Annotated[
        bool,
        typer.Option(
            "--toggle", help="Resume if paused, else pause: for a compositor's key binding."
        ),
    ] = False,
    home: Home = None,
) -> None:
    """Pause capture, optionally for a while."""
    from backscroll import answer
    from backscroll.manage import pause_until

    request = ask(contract.PauseRequest, duration=duration)
    pause_until(request.duration)  # a bad duration is refused before the store opens
    with open_store(home, write=True) as store:
        if toggle and store.state().pause.active(now_us()):
            answer.resume(store, "cli")
            typer.echo("capture resumed")
            return
        paused = answer.pause(store, request, "cli")
    shown = f"until {paused.until:%H:%M}" if paused.until else "until resumed"
    typer.echo(f"capture paused {shown}")


def resume(home: Home = None) -> None:
    """Resume capture."""
    from backscroll import answer

    with open_store(home, write=True) as store:
        answer.resume(store, "cli")
    typer.echo("capture resumed")


@deny_app.callback()
def deny_default(ctx: typer.Context, home: Home = None) -> None:
    """Apps and titles that are never recorded (a case-insensitive substring match)."""
    if ctx.invoked_subcommand is None:
        deny_list(home)


@deny_app.command("list")
def deny_list(home: Home = None) -> None:
    """Show the deny list."""
    from backscroll import answer

    with open_store(home, write=True) as store:
        listed = answer.deny(store, contract.DenyRequest(), "cli")
    for pattern in listed.deny_apps:
        typer.echo(pattern)


@deny_app.command("add")
def deny_add(pattern: str, home: Home = None) -> None:
    """Never record apps, windows or sites whose name, title or address contains PATTERN."""
    from backscroll import answer

    request = ask(contract.DenyRequest, deny_add=pattern)
    with open_store(home, write=True) as store:
        answer.deny(store, request, "cli")
    typer.echo(f"denied: {pattern}")


@deny_app.command("remove")
def deny_remove(pattern: str, home: Home = None) -> None:
    """Take PATTERN off the deny list."""
    from backscroll import answer

    request = ask(contract.DenyRequest, deny_remove=pattern)
    with open_store(home, write=True) as store:
        answer.deny(store, request, "cli")
    typer.echo(f"no longer denied: {pattern}")


def config(
    trigger: Annotated[str | None, typer.Option(help=contract.TRIGGER)] = None,
    interval: Annotated[float | None, typer.Option(help=contract.INTERVAL)] = None,
    poll: Annotated[float | None, typer.Option(help=contract.POLL)] = None,
    min_interval: Annotated[float | None, typer.Option(help=contract.MIN_INTERVAL)] = None,
    redact: Annotated[str | None, typer.Option(help=f"on or off: {contract.REDACT}")] = None,
    encrypt_text: Annotated[
        str | None, typer.Option(help=f"on or off: {contract.ENCRYPT_TEXT}")
    ] = None,
    encrypt_thumbnails: Annotated[
        str | None, typer.Option(help=f"on or off: {contract.ENCRYPT_THUMBNAILS}")
    ] = None,
    cap: Annotated[int | None, typer.Option(help=contract.STORAGE_CAP)] = None,
    retention: Annotated[int | None, typer.Option(help=contract.RETENTION)] = None,
    hotkey: Annotated[str | None, typer.Option(help=contract.HOTKEY)] = None,
    backend: Annotated[str | None, typer.Option(help=contract.BACKEND)] = None,
    announce_accessibility: Annotated[
        str | None, typer.Option(help=f"on or off: {contract.ANNOUNCE}")
    ] = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Show the configuration, or change it (each change is an event in the log)."""
    from backscroll import answer

    request = ask(
        contract.ConfigRequest,
        trigger=trigger,
        interval_seconds=interval,
        poll_seconds=poll,
        min_interval_seconds=min_interval,
        redact=on_off(redact, "--redact"),
        encrypt_text=on_off(encrypt_text, "--encrypt-text"),
        encrypt_thumbnails=on_off(encrypt_thumbnails, "--encrypt-thumbnails"),
        storage_cap_mb=cap,
        retention_days=retention,
        pause_hotkey=hotkey,
        capture_backend=backend,
        announce_accessibility=on_off(announce_accessibility, "--announce-accessibility"),
    )
    with open_store(home, write=True) as store:
        configured = answer.configure(store, request, "cli")
    if json:
        typer.echo(contract.encode(configured))
        return
    for key, value in configured.config.to_dict().items():
        shown = ", ".join(value) if isinstance(value, list | tuple) else value
        typer.echo(f"{key}: {shown}")
    if configured.reindex_needed:
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
    forget_citing: Annotated[
        bool, typer.Option("--forget-citing", help=contract.FORGET_CITING)
    ] = False,
    home: Home = None,
) -> None:
    """Delete frames (everything when no scope is given); returns when the purge is done, or
    exits 1 saying why it cannot be. Kept memories citing a deleted frame are named, or
    forgotten too."""
    from backscroll import answer
    from backscroll.manage import check_scope

    if damaged:
        if before or since or app is not None:
            raise UsageError("--damaged takes no other scope")
        _clear_damaged(home, yes)
        return
    # Confirmed below, or the command stops there.
    request = ask(
        contract.DeleteRequest,
        since=since,
        before=before,
        app=app,
        confirm=True,
        forget_citing=forget_citing,
    )
    span = answer.time_span(request.since, None, request.before)
    check_scope(*span, request.app)
    scope = answer.scope_text(*span, request.app)
    if not yes:
        typer.confirm(f"Delete every frame in {scope}? This cannot be undone", abort=True)
        request = _offer_to_forget_citing(home, request, span)
    with open_store(home, write=True) as store:
        deleted = answer.delete(store, request, "cli", span)
    typer.echo(f"deleted {deleted.deleted} frame(s) in {scope}")
    if deleted.memories_forgotten:
        shown = ", ".join(deleted.memories_forgotten)
        typer.echo(
            f"forgot {len(deleted.memories_forgotten)} kept memory(ies) citing them: {shown}"
        )
    if deleted.cited_by:
        typer.echo(
            f"{len(deleted.cited_by)} kept memory(ies) cite a deleted frame, their source now "
            f"pointing at nothing: {', '.join(deleted.cited_by)} (backscroll keep forget ID, or "
            "clear --forget-citing next time)"
        )


def _offer_to_forget_citing(
    home: Path | None, request: contract.DeleteRequest, span: tuple[Any, Any]
) -> contract.DeleteRequest:
    """Name the kept memories whose source the deletion takes away, and offer to forget them."""
    import msgspec

    from backscroll.keep import Keeper

    if request.forget_citing:
        return request
    with open_store(home) as store:
        citing = Keeper(store).citing(*span, request.app)
    if not citing:
        return request
    names = ", ".join(m.id for m in citing)
    forget = typer.confirm(
        f"{len(citing)} kept memory(ies) cite these frames as their source ({names}): forget "
        "them too?"
    )
    return msgspec.structs.replace(request, forget_citing=forget)


def _clear_damaged(home: Path | None, yes: bool) -> None:
    from backscroll.manage import discard_damaged

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
    views_only: Annotated[bool, typer.Option("--views-only", help=contract.VIEWS_ONLY)] = False,
    yes: Annotated[bool, typer.Option("-y", "--yes", help="Do not ask for confirmation.")] = False,
    no_meaning: Annotated[bool, typer.Option("--no-meaning", help=contract.NO_MEANING)] = False,
    home: Home = None,
) -> None:
    """Re-encrypt / decrypt / redact stored frames under the current config (or only rebuild
    the views); safe to interrupt and run again."""
    from rich.progress import Progress

    from backscroll import answer

    request = ask(contract.ReindexRequest, views_only=views_only, no_meaning=no_meaning)
    if not request.views_only and not yes:
        typer.confirm("Rewrite every stored frame under the current config?", abort=True)
    with open_store(home, write=True, catch_up=False) as store, Progress(transient=True) as bar:
        task = bar.add_task(
            "rebuilding views" if request.views_only else "rewriting frames", total=None
        )

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        counts = answer.reindex(store, request, step)
        if not request.no_meaning:
            _embed(store, bar)
    if request.views_only:
        typer.echo("views rebuilt")
    else:
        typer.echo("reindexed: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def import_(
    source: Annotated[
        str | None, typer.Argument(metavar="FILE|-", help=contract.SOURCE, show_default=False)
    ] = None,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help=contract.SKIP_BAD)] = False,
    archive: Annotated[
        str | None,
        typer.Option("--archive", metavar="FILE", help=contract.ARCHIVE_IN, show_default=False),
    ] = None,
    passphrase_file: PassphraseFile = None,
    no_meaning: Annotated[bool, typer.Option("--no-meaning", help=contract.NO_MEANING)] = False,
    home: Home = None,
) -> None:
    """Append frames from JSON Lines (ts, app, title, text, text_source, image, url); or, with
    --archive, restore a store from its archive into a new home."""
    from rich.progress import Progress

    from backscroll import answer

    if archive is not None or passphrase_file is not None:
        _import_archive(source, skip_bad, archive, passphrase_file, home)
        return
    if source is None:
        raise UsageError("import needs FILE (JSON Lines; - for standard input) or --archive FILE")
    request = ask(contract.ImportRequest, source=source, skip_bad=skip_bad, no_meaning=no_meaning)
    if request.source != "-" and not Path(request.source).is_file():
        raise UsageError(f"no such file: {request.source}")
    # Bytes that are not UTF-8 reach the parser as surrogates, which refuses their line.
    stream = (
        io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
        if request.source == "-"
        else Path(request.source).open(encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    )
    with stream, open_store(home, write=True) as store, Progress(transient=True) as bar:
        task = bar.add_task("importing", total=None)
        result = answer.import_frames(
            store, request, stream, progress=lambda n: bar.update(task, completed=n)
        )
        if not request.no_meaning:
            _embed(store, bar)
    for line in result.skipped:
        typer.echo(f"skipped {line}", err=True)
    typer.echo(f"imported {result.imported} frame(s)")


def _import_archive(
    source: str | None,
    skip_bad: bool,
    archive: str | None,
    passphrase_file: str | None,
    home: Path | None,
) -> None:
    from rich.progress import Progress

    from backscroll import answer
    from base.home import resolve_home

    if archive is None:
        raise UsageError("--passphrase-file goes with --archive FILE")
    if passphrase_file is None:
        raise UsageError("--archive needs --passphrase-file PF, a file holding the passphrase")
    if source is not None:
        raise UsageError(f"import takes FILE or --archive, not both ({source} and {archive})")
    if skip_bad:
        raise UsageError("--skip-bad is for JSON Lines: an archive is restored whole or not at all")
    request = ask(
        contract.ArchiveImportRequest,
        archive=archive,
        passphrase_file=passphrase_file,
    )
    # The home is not opened as a store: opening it to write would make it, and an archive
    # is restored only into a home that holds nothing.
    with Progress(transient=True) as bar:
        task = bar.add_task("restoring", total=None)
        result = answer.import_archive(
            resolve_home(home), request, progress=lambda n: bar.update(task, completed=n)
        )
    typer.echo(
        f"restored {result.events:,} event(s), {result.frames:,} frame(s) and "
        f"{result.thumbnails:,} thumbnail(s) into {result.home}"
    )


def _embed(store: MemoryStore, bar: Progress) -> None:
    """Build the meaning view before returning, with a progress bar; Ctrl-C leaves the rest to
    the daemon, which resumes where this stopped."""
    from backscroll import answer

    task = bar.add_task("embedding for search by meaning (Ctrl-C: leave it to the daemon)")

    def step(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    try:
        answer.embed(store, step)
    except KeyboardInterrupt:
        typer.echo("search by meaning: the rest is left to the daemon", err=True)
