"""The commands that change a store: import, pause, deny, delete, reindex; and the audit."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from backscroll.record import record_frame
from backscroll.store import MemoryStore
from base.clock import now_us
from base.errors import DiskFullError, UsageError, is_disk_full, is_text
from base.fs import fsync_dir
from capture.seen import Seen
from eventlog.contract import EventLog
from eventlog.events import (
    MAX_NAME,
    MAX_TEXT,
    MAX_TITLE,
    MAX_URL,
    CapturePaused,
    CaptureResumed,
    DamageDiscarded,
    DeleteReason,
    Event,
    FrameCaptured,
    FramesDeleted,
    Origin,
)

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

    Every line is checked before anything is appended: a malformed line stops the import
    with its line number and nothing imported, so it can be fixed and run again without
    duplicates; with ``skip_bad`` it is reported and skipped. A full disk stops it part way,
    and the error says through which line the frames were imported.
    """
    if isinstance(lines, list | tuple):
        return _import(store, lines, skip_bad, progress)
    seekable = getattr(lines, "seekable", None)
    if seekable is not None and seekable():
        return _import(store, _Rereadable(lines), skip_bad, progress)
    # Standard input reads once: the lines are kept for the second reading in an unnamed
    # file in the home, which leaves nothing behind (they are screen text).
    import tempfile

    with tempfile.TemporaryFile(
        "w+", encoding="utf-8", errors="surrogateescape", dir=store.home
    ) as spool:
        try:
            spool.writelines(lines)
            spool.flush()
        except OSError as exc:
            if is_disk_full(exc):
                raise DiskFullError(store.home, "keep the import's lines to read") from None
            raise
        return _import(store, _Rereadable(spool), skip_bad, progress)


def _import(
    store: MemoryStore,
    rows: Iterable[str],
    skip_bad: bool,
    progress: Callable[[int], None] | None,
) -> ImportResult:
    now = now_us()  # one clock reading: both passes agree on "a day in the future"
    skipped: list[str] = []
    bad: set[int] = set()
    for number, line in enumerate(rows, 1):
        if not line.strip():
            continue
        try:
            parse_import_line(line, now)
        except UsageError as exc:
            if not skip_bad:
                raise UsageError(f"line {number}: {exc}; nothing was imported") from None
            skipped.append(f"line {number}: {exc}")
            bad.add(number)
    config = store.config
    crypto = store.ensure_crypto() if config.encrypt_text or config.encrypt_thumbnails else None
    pending: list[Seen] = []
    imported = last = through = 0

    def flush() -> None:
        nonlocal imported, through
        try:
            with store.log.batch() as batch:
                for seen in pending:
                    record_frame(batch, seen, config, crypto, store.home)
        except DiskFullError:
            lines = f" (lines 1..{through})" if imported else ""
            raise DiskFullError(
                store.home, f"import on: {imported} frame(s) were imported{lines}"
            ) from None
        imported += len(pending)
        through = last
        pending.clear()
        if progress:
            progress(imported)

    for number, line in enumerate(rows, 1):
        if number in bad or not line.strip():
            continue
        pending.append(parse_import_line(line, now))
        last = number
        if len(pending) >= IMPORT_BATCH:
            flush()
    if pending:
        flush()
    store.refresh()
    return ImportResult(imported, skipped)


class _Rereadable:
    """A file read from its start each time it is iterated."""

    def __init__(self, file: Any) -> None:
        self.file = file

    def __iter__(self) -> Iterator[str]:
        self.file.seek(0)
        return iter(self.file)


def parse_import_line(line: str, now: int) -> Seen:
    """One JSON Lines row, checked against what a ``FrameCaptured`` may hold before anything
    is appended; the error names the field and the value."""
    if not is_text(line):  # bytes that were not UTF-8, kept by surrogateescape
        raise UsageError("not UTF-8 text (a binary line?)")
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise UsageError("not a JSON object")
    for key in ("ts", "app", "title", "text"):
        if key not in row:
            raise UsageError(f"missing '{key}'")
    limits = {"app": MAX_NAME, "title": MAX_TITLE, "text": MAX_TEXT}
    for key, limit in limits.items():
        value = row[key]
        if not isinstance(value, str):
            raise UsageError(f"'{key}' must be a string, not {_shown(value)}")
        if len(value) > limit:
            raise UsageError(f"'{key}' is {len(value):,} characters; at most {limit:,}")
        if not is_text(value):
            raise UsageError(f"'{key}' holds a lone surrogate (\\ud800-\\udfff), not text")
    source = row.get("text_source", "ocr" if row["text"] else "none")
    if source not in TEXT_SOURCES:
        raise UsageError(f"'text_source' must be one of {', '.join(TEXT_SOURCES)}")
    url = _import_url(row.get("url", ""))
    jpeg = None
    image = row.get("image")
    if image is not None and image != "":
        if not isinstance(image, str) or not is_text(image) or "\0" in image:
            raise UsageError(f"'image' must be a file path, not {_shown(image)}")
        jpeg = _jpeg_from(Path(image))
    return Seen(
        captured_us=_timestamp_us(row["ts"], now),
        app=row["app"],
        title=row["title"],
        text=row["text"],
        text_source=source,
        reason="import",
        jpeg=jpeg,
        url=url,
    )


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\x7f]*")


def _import_url(value: Any) -> str:
    """An import row's optional page address: absolute (a scheme), one line, no spaces."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not is_text(value):
        raise UsageError(f"'url' must be a string, not {_shown(value)}")
    if len(value) > MAX_URL:
        raise UsageError(f"'url' is {len(value):,} characters; at most {MAX_URL:,}")
    if not _URL.fullmatch(value):
        raise UsageError(
            f"'url' {_shown(value)} is not an address (scheme:…, without spaces or control "
            "characters)"
        )
    return value


FUTURE_US = 86_400_000_000
"""How far ahead of the clock a frame's time may be: a day (time zones, a skewed clock)."""


def _timestamp_us(value: Any, now: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"'ts' must be ISO 8601 or epoch seconds, not {_shown(value)}")
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(f"'ts' {_shown(value)} is not ISO 8601 or epoch seconds") from None
        if when.tzinfo is None:
            when = when.astimezone()
        seconds = when.timestamp()
    else:
        seconds = float(value) if isinstance(value, int) and abs(value) < 2**62 else value
    if not isinstance(seconds, float | int) or not math.isfinite(seconds):
        raise UsageError(f"'ts' {_shown(value)} is not a time")
    us = int(seconds * 1_000_000)
    if us < 0:
        raise UsageError(f"'ts' {_shown(value)} is before 1970")
    if us > now + FUTURE_US:
        raise UsageError(f"'ts' {_shown(value)} is more than a day in the future")
    return us


def _shown(value: Any) -> str:
    """A value for an error message: short, on one line."""
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


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


def pause(store: MemoryStore, until: datetime | None, origin: Origin = "cli") -> None:
    until_us = int(until.timestamp() * 1_000_000) if until else None
    store.append(CapturePaused(ts_us=now_us(), until_us=until_us, origin=origin))


def resume(store: MemoryStore, origin: Origin = "cli") -> None:
    store.append(CaptureResumed(ts_us=now_us(), origin=origin))


def pause_until(duration: str | None, now: datetime | None = None) -> datetime | None:
    """``30m``/``2h`` from now; None pauses until resumed. Only durations are accepted: a
    period such as ``yesterday`` is not a length of time."""
    if duration is None:
        return None
    if not duration.strip():
        raise UsageError("an empty pause duration: write e.g. 30m or 2h, or omit it")
    from query.when import parse_when

    now = now or datetime.now(UTC).astimezone()
    start, end = parse_when(duration, now=now)
    if end != now or end <= start:
        raise UsageError(f"'{duration}' is not a duration (write e.g. 30m or 2h)")
    try:
        return now + (end - start)
    except OverflowError:
        raise UsageError(f"'{duration}' is longer than the calendar goes") from None


def deny(store: MemoryStore, add: str | None, remove: str | None, origin: Origin = "cli") -> None:
    for name, value in (("add", add), ("remove", remove)):
        if value is not None and not value.strip():
            raise UsageError(f"deny {name}: the pattern is empty (it would match every window)")
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
    """Append a tombstone and return once its purge is complete; returns frames removed.

    No scope at all means every frame; an empty scope (``app=""``) is refused, never taken
    for "everything".
    """
    check_scope(start, end, app)
    offset = append_tombstone(
        store.log, ids=ids, since_us=_us(start), until_us=_us(end), app=app, origin=origin
    )
    return wait_for_completion(store, offset, wait)


def append_tombstone(
    log: EventLog,
    *,
    ids: tuple[int, ...] = (),
    since_us: int | None = None,
    until_us: int | None = None,
    app: str | None = None,
    reason: DeleteReason = "user",
    origin: Origin = "cli",
) -> int:
    """Append a ``FramesDeleted`` of this scope; its offset.

    Its time and ``upto_id`` are read under the append lock: every frame appended before it
    is at or below ``upto_id``, and every frame seen before its time but appended after it
    is dropped by the recorder (``backscroll.record.Recorder``). Read before the lock, a
    frame appended in between escaped both.
    """
    with log.batch() as batch:
        return batch.append(
            FramesDeleted(
                ts_us=now_us(),
                upto_id=batch.next_offset - 1,
                ids=ids,
                since_us=since_us,
                until_us=until_us,
                app=app,
                reason=reason,
                origin=origin,
            )
        )


def check_scope(start: datetime | None, end: datetime | None, app: str | None) -> None:
    """A deletion's scope as given: an empty one is refused, never taken for everything."""
    if app is not None and not app.strip():
        raise UsageError("an empty app scope would match every frame: name the app, or omit it")
    if app is not None and not is_text(app):
        raise UsageError("the app scope is not UTF-8 text")
    if start is not None and end is not None and end <= start:
        raise UsageError("the scope ends before it starts")
    for name, bound in (("since", start), ("until", end)):
        if bound is not None and bound.timestamp() < 0:
            raise UsageError(f"{name}: {bound:%Y-%m-%d} is before 1970, when capture times begin")


class Discarded(NamedTuple):
    files: int
    events: int


def discard_damaged(store: MemoryStore, origin: Origin = "cli") -> Discarded:
    """The person's decision on damage: rewrite every segment that holds unreadable bytes or
    events that do not decode without them, delete the copies kept aside, and record it."""
    compacted = store.log.compact(lambda _, event: event, repair=True)
    store.refresh()  # the damage this compaction found is in the views now
    files = store.log.kept_aside()
    for path in files:
        path.unlink()
    for folder in {path.parent for path in files}:
        fsync_dir(folder)
    state = store.state()
    if files or compacted.undecodable or state.damage or state.unapplied:
        store.append(
            DamageDiscarded(
                ts_us=now_us(),
                upto_id=store.log.next_offset() - 1,
                files=len(files),
                events=compacted.undecodable,
                origin=origin,
            )
        )
    return Discarded(len(files), compacted.undecodable)


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
        known = {str(cls.__struct_config__.tag) for cls in TYPE_CODES if cls is not FrameCaptured}
        unknown = sorted(kinds - known)
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise UsageError(f"unknown event kind {names}: use {', '.join(sorted(known))}")
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
