"""``daemon.json``: the daemon's heartbeat, written every tick and read by ``status``.

Rewritten in place in a file padded to a fixed size, so a heartbeat can still be written
when the disk is full (overwriting allocated blocks needs no new space): that is exactly when
``status`` must be able to say "paused (disk full)".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import msgspec

from base import jsontext

FILE = "daemon.json"
SIZE = 8192


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    """One tick of a running daemon, as ``daemon.json`` holds it, field for field.

    Only ``pid`` and ``last_tick_us`` are always there: a tick too big for the file is
    written with those two alone (see ``HeartbeatFile.write``), and a heartbeat from an
    older daemon may lack a later field, so every other field has a default.
    """

    pid: Annotated[int, msgspec.Meta(ge=1, lt=2**31)]
    """A pid_t: a foreign file's 0, negative or huge pid would make ``kill(pid, 0)`` probe a
    process group or overflow."""
    started_us: int | None = None
    last_tick_us: int
    last_outcome: str | None = None
    """What the last tick did: ``captured``, ``unchanged``, ``denied``, ``paused``, …"""
    last_capture_us: int | None = None
    """When the capture worker last finished a capture (a frame stored, or a duplicate or a
    denied page found); None: none yet this run. A tick says only that the probe loop runs:
    this says that capture does."""
    problem: str | None = None
    """Why capture is paused (``disk full``, the display gone); None while it captures."""
    trigger: str | None = None
    poll_seconds: float | None = None
    min_interval_seconds: float | None = None
    interval_seconds: float | None = None
    last_reason: str | None = None
    last_text_source: str | None = None
    text_sources: dict[str, int] | None = None
    """This run's frames by text source (``reasons``: by capture reason); None: not known."""
    reasons: dict[str, int] | None = None
    redactions: dict[str, int] | None = None
    """Secrets redacted this run, by kind; None: not known, so ``status`` shows no count."""
    hotkey_problem: str | None = None
    config_problem: str | None = None
    backend: str | None = None
    """The capture backend (``x11``, ``wlroots``, ``gnome``); None: an older daemon's heartbeat."""
    abilities: list[str] | None = None
    """What the backend can and cannot do on this desktop, one line each."""


class HeartbeatFile:
    """The daemon's ``daemon.json``: made at start, rewritten each tick (made again if it
    was removed), removed at stop."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b" " * SIZE)
        finally:
            os.close(fd)

    def write(self, beat: Heartbeat) -> None:
        body = msgspec.json.encode(beat)
        if len(body) >= SIZE:  # only the free-text problems can grow that long
            body = msgspec.json.encode(Heartbeat(pid=beat.pid, last_tick_us=beat.last_tick_us))
        try:
            # O_CREAT: a daemon.json removed while the daemon runs is made again at the next
            # tick (without it, the open's FileNotFoundError ended the daemon).
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            return  # a heartbeat is best effort: status then reports the daemon as stale
        try:
            os.pwrite(fd, body.ljust(SIZE), 0)
        except OSError:
            pass
        finally:
            os.close(fd)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def read_heartbeat(home: Path) -> Heartbeat | None:
    """The last tick in ``home``; None when there is none, or it is half written, damaged
    or not a heartbeat at all."""
    try:
        return jsontext.decode((home / FILE).read_bytes(), Heartbeat)
    except (OSError, msgspec.DecodeError):
        return None
