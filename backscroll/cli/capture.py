"""Capture commands: start (the daemon, in the foreground)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from backscroll.cli._common import Home


def register(app: typer.Typer) -> None:
    app.command()(start)


def start(
    interval: Annotated[
        float | None, typer.Option("--interval", help="Interval / idle fallback, seconds.")
    ] = None,
    log_file: Annotated[
        Path | None, typer.Option("--log-file", help="Log here, not stderr.")
    ] = None,
    home: Home = None,
) -> None:
    """Run the capture daemon in the foreground; Ctrl-C stops it after the frame in hand."""
    import errno
    import logging
    import os
    import signal

    from backscroll.daemon import Daemon
    from base.errors import UsageError
    from base.fs import ensure_dir, open_log, private_umask

    private_umask()  # before the store opens: the log file below holds what was on screen
    stream = sys.stderr
    if log_file:
        ensure_dir(log_file.parent)
        try:
            stream = os.fdopen(open_log(log_file), "a", encoding="utf-8")
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise UsageError(f"cannot log to {log_file}: {why}") from None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # one line per change is noise
    daemon = Daemon(home, interval=interval)
    # Service managers stop with SIGTERM (launchd, Task Scheduler): stop as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: daemon.stop())
    daemon.run()
