"""First-run commands: demo (a recorded headless desktop), install-service, uninstall-service."""

from __future__ import annotations

from typing import Annotated

import typer

from backscroll.cli._common import Home


def register(app: typer.Typer) -> None:
    app.command()(demo)
    app.command("install-service")(install_service)
    app.command("uninstall-service")(uninstall_service)


def demo(
    seconds: Annotated[
        float, typer.Option("--seconds", min=5, help="How long to switch windows, seconds.")
    ] = 60,
    home: Annotated[
        str | None,
        typer.Option(
            "--home", help="Store folder to record into (default: a new temporary folder)."
        ),
    ] = None,
    view: Annotated[
        bool,
        typer.Option("--view", help="Then serve the recorded store's web view until Ctrl+C."),
    ] = False,
) -> None:
    """Record a private headless desktop with the real daemon, then search what it showed."""
    from backscroll.demo import run_demo

    report = run_demo(seconds=seconds, home=home, echo=typer.echo)
    if view:
        from functools import partial

        from backscroll.cli.view import announce
        from backscroll.view import serve

        typer.echo("")
        serve(report.home, 0, partial(announce, browse=True))


def install_service(home: Home = None) -> None:
    """Run the capture daemon at login: systemd user unit, LaunchAgent or scheduled task."""
    from backscroll.service import install

    done = install(home)
    _report(done, "installed")


def uninstall_service(home: Home = None) -> None:
    """Stop the capture service and remove everything install-service wrote.

    One service per user, whichever home it captures into: ``--home`` is taken as by every
    command."""
    from backscroll.service import uninstall

    done = uninstall()
    _report(done, "removed")


def _report(done: object, verb: str) -> None:
    from backscroll.service import Done

    assert isinstance(done, Done)
    for path in done.files:
        typer.echo(f"{verb} {path}")
    for argv in done.commands:
        typer.echo(f"ran: {' '.join(argv)}")
    for note in done.notes:
        typer.echo(note)
