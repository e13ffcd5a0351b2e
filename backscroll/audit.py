"""The audit trail: control events newest first, and the daemon runs that never stopped."""

from __future__ import annotations

from datetime import datetime

from backscroll.store import MemoryStore
from base.clock import to_us
from base.errors import UsageError
from eventlog.events import (
    Event,
    FrameCaptured,
)


def audit(
    store: MemoryStore, since: datetime | None = None, kinds: set[str] | None = None
) -> list[tuple[int, Event]]:
    """Control events newest first: the audit trail (scopes, never content)."""
    from eventlog.events import FRAME_TYPE, TYPE_CODES

    types = {code for cls, code in TYPE_CODES.items() if code != FRAME_TYPE}
    if kinds:
        known = {str(cls.__struct_config__.tag) for cls in TYPE_CODES if cls is not FrameCaptured}
        unknown = sorted(kinds - known)
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise UsageError(f"unknown event kind {names}: use {', '.join(sorted(known))}")
        types = {TYPE_CODES[cls] for cls in TYPE_CODES if cls.__struct_config__.tag in kinds}
    floor = to_us(since) or 0
    out = [(o, e) for o, e in store.log.read(types=types) if e.ts_us >= floor]
    out.reverse()
    return out


def crashed_runs(store: MemoryStore) -> set[int]:
    """Offsets of DaemonStarted events whose run ended without a DaemonStopped: the daemon
    was killed or crashed (a run still going is not counted)."""
    from eventlog.events import TYPE_CODES, DaemonStarted, DaemonStopped

    types = {TYPE_CODES[DaemonStarted], TYPE_CODES[DaemonStopped]}
    open_run: int | None = None
    crashed: set[int] = set()
    for offset, event in store.log.read(types=types):
        if isinstance(event, DaemonStarted):
            if open_run is not None:
                crashed.add(open_run)
            open_run = offset
        else:
            open_run = None
    return crashed
