"""The commands that change a store: import, pause, deny, delete, reindex; and the audit."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from backscroll.errors import UsageError
from backscroll.store import MemoryStore
from capture.record import Seen, record_frame
from eventlog.events import (
    CapturePaused,
    CaptureResumed,
    Event,
    FramesDeleted,
    KeyCreated,
    Origin,
)
from eventlog.segment import now_us

IMPORT_BATCH = 1000
TEXT_SOURCES = ("ax", "ocr", "none")


class ImportResult(NamedTuple):
    imported: int
    skipped: list[str]


def import_frames(
    store: MemoryStore,
    lines: Iterable[str],
    *,
    skip_bad: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Append frames given as JSON Lines, in batches sharing one fsync.

    A malformed line stops the import with its line number (nothing from it is appended);
    with ``skip_bad`` it is reported and skipped.
    """
    config = store.config
    crypto = store_crypto(store, config.encrypt_text or config.encrypt_thumbnails)
    skipped: list[str] = []
    pending: list[Seen] = []
    imported = 0

    def flush() -> None:
        nonlocal imported
        with store.log.batch() as batch:
            for seen in pending:
                record_frame(batch, seen, config, crypto, store.home)
        imported += len(pending)
        pending.clear()
        if progress:
            progress(imported)

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            pending.append(parse_import_line(line))
        except UsageError as exc:
            if not skip_bad:
                if pending:
                    flush()
                raise UsageError(f"line {number}: {exc} (nothing appended from it)") from None
            skipped.append(f"line {number}: {exc}")
            continue
        if len(pending) >= IMPORT_BATCH:
            flush()
    if pending:
        flush()
    store.refresh()
    return ImportResult(imported, skipped)


def parse_import_line(line: str) -> Seen:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise UsageError("not a JSON object")
    for key in ("ts", "app", "title", "text"):
        if key not in row:
            raise UsageError(f"missing '{key}'")
    for key in ("app", "title", "text"):
        if not isinstance(row[key], str):
            raise UsageError(f"'{key}' must be a string")
    source = row.get("text_source", "ocr" if row["text"] else "none")
    if source not in TEXT_SOURCES:
        raise UsageError(f"'text_source' must be one of {', '.join(TEXT_SOURCES)}")
    jpeg = None
    if row.get("image"):
        jpeg = _jpeg_from(Path(row["image"]))
    return Seen(
        captured_us=_timestamp_us(row["ts"]),
        app=row["app"],
        title=row["title"],
        text=row["text"],
        text_source=source,
        reason="import",
        jpeg=jpeg,
    )


def _timestamp_us(value: Any) -> int:
    if isinstance(value, bool):
        raise UsageError("'ts' must be ISO 8601 or epoch seconds")
    if isinstance(value, int | float):
        return int(value * 1_000_000)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(f"'ts' {value!r} is not ISO 8601 or epoch seconds") from None
        if when.tzinfo is None:
            when = when.astimezone()
        return int(when.timestamp() * 1_000_000)
    raise UsageError("'ts' must be ISO 8601 or epoch seconds")


def _jpeg_from(path: Path) -> bytes:
    try:
        from io import BytesIO

        from PIL import Image

        with Image.open(path) as image:
            out = BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=60)
            return out.getvalue()
    except (OSError, ImportError) as exc:
        raise UsageError(f"cannot read image {path}: {exc}") from None


def store_crypto(store: MemoryStore, needed: bool) -> Any:
    """The frame cipher, creating the key on first encrypted write."""
    if not needed:
        return None
    from backscroll import keys

    if not keys.ENCRYPTION_AVAILABLE:
        return None
    from backscroll.crypto import FrameCrypto

    key = keys.load_key(store.home, create=True)
    assert key is not None
    fingerprint = keys.fingerprint(key)
    if store.state().key_fingerprint != fingerprint:
        # The audit trail records which key (by fingerprint, never the key) encrypts what.
        status = keys.key_status(store.home)
        store.append(KeyCreated(ts_us=now_us(), store=status.store or "", fingerprint=fingerprint))
    store.__dict__["crypto"] = FrameCrypto(key)
    return store.crypto


def pause(store: MemoryStore, until: datetime | None, origin: Origin = "cli") -> None:
    until_us = int(until.timestamp() * 1_000_000) if until else None
    store.append(CapturePaused(ts_us=now_us(), until_us=until_us, origin=origin))


def resume(store: MemoryStore, origin: Origin = "cli") -> None:
    store.append(CaptureResumed(ts_us=now_us(), origin=origin))


def pause_until(duration: str | None, now: datetime | None = None) -> datetime | None:
    """``30m``/``2h`` from now; None pauses until resumed. Only durations are accepted: a
    period such as ``yesterday`` is not a length of time."""
    if not duration:
        return None
    from query.phrases import parse_when

    now = now or datetime.now(UTC).astimezone()
    start, end = parse_when(duration, now=now)
    if end != now or end <= start:
        raise UsageError(f"'{duration}' is not a duration (write e.g. 30m or 2h)")
    return now + (end - start)


def deny(store: MemoryStore, add: str | None, remove: str | None, origin: Origin = "cli") -> None:
    patterns = list(store.config.deny_apps)
    if add and add.lower() not in {p.lower() for p in patterns}:
        patterns.append(add)
    if remove:
        kept = [p for p in patterns if p.lower() != remove.lower()]
        if len(kept) == len(patterns):
            raise UsageError(f"'{remove}' is not on the deny list")
        patterns = kept
    store.set_config(origin, deny_apps=patterns)


def delete(
    store: MemoryStore,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    app: str | None = None,
    ids: tuple[int, ...] = (),
    origin: Origin = "cli",
    wait: Callable[[], None] | None = None,
) -> int:
    """Append a tombstone and return once its purge is complete; returns frames removed."""
    request = FramesDeleted(
        ts_us=now_us(),
        upto_id=store.log.next_offset() - 1,
        ids=ids,
        since_us=_us(start),
        until_us=_us(end),
        app=app or None,
        origin=origin,
    )
    offset = store.log.append(request)
    return wait_for_completion(store, offset, wait)


def rebuild_views(store: MemoryStore, progress: Callable[[int, int], None] | None = None) -> None:
    """Replay the log into new generations of every view, then switch atomically."""
    from backscroll.reindex import reindex

    reindex(store, views_only=True, progress=progress)


def wait_for_completion(
    store: MemoryStore, request: int, tick: Callable[[], None] | None = None
) -> int:
    """Execute the request ourselves when no daemon holds the views, else wait for it."""
    import time

    while True:
        store.refresh()
        for deletion in store.state().deletions:
            if deletion.offset == request and deletion.completed_us is not None:
                return deletion.frames
        if tick:
            tick()
        time.sleep(0.2)


def audit(
    store: MemoryStore, since: datetime | None = None, kinds: set[str] | None = None
) -> list[tuple[int, Event]]:
    """Control events newest first: the audit trail (scopes, never content)."""
    from eventlog.events import FRAME_TYPE, TYPE_CODES

    types = {code for cls, code in TYPE_CODES.items() if code != FRAME_TYPE}
    if kinds:
        types = {TYPE_CODES[cls] for cls in TYPE_CODES if cls.__struct_config__.tag in kinds}
    floor = _us(since) or 0
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


def _us(when: datetime | None) -> int | None:
    return int(when.timestamp() * 1_000_000) if when else None
