"""``backscroll import``: frames given as JSON Lines, checked whole before any is appended."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import msgspec

from backscroll.crypto import MEMO_WORDS
from backscroll.record import record_frame
from backscroll.store import MemoryStore
from base import jsontext
from base.clock import now_us
from base.errors import DiskFullError, LockedError, UsageError, is_disk_full, is_text
from capture.seen import Seen
from eventlog.events import (
    MAX_NAME,
    MAX_TEXT,
    MAX_TITLE,
    MAX_URL,
)

if TYPE_CHECKING:
    from projector.runner import Projector

IMPORT_BATCH = 1000
KEEP_CHARACTERS = 64_000_000
"""The lines the check keeps as it read them (the first 64 MB of text, ~38,000 frames of
1.7 KB), so that they are not read a second time (~8 µs a line); the rest is read again,
so that a file of any size fits in memory."""

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
    kept: dict[int, Seen] = {}  # the first lines as the check read them, not read again
    room = KEEP_CHARACTERS
    for number, line in enumerate(rows, 1):
        if not line.strip():
            continue
        try:
            seen = parse_import_line(line, now)
        except UsageError as exc:
            if not skip_bad:
                raise UsageError(f"line {number}: {exc}; nothing was imported") from None
            skipped.append(f"line {number}: {exc}")
            bad.add(number)
            continue
        if room > 0:
            kept[number] = seen
            room -= len(line)
    config = store.config
    crypto = store.ensure_crypto() if config.encrypt_text or config.encrypt_thumbnails else None
    pending: list[Seen] = []
    memo: dict[str, bytes] = {}  # word → blind token, for this import only
    imported = last = through = 0

    def flush() -> None:
        nonlocal imported, through
        if len(memo) > MEMO_WORDS:
            memo.clear()
        try:
            with store.log.batch() as batch:
                for seen in pending:
                    record_frame(batch, seen, config, crypto, store.home, memo)
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
        indexing.run(lambda views: views.apply_new())

    indexing = _Indexing(store)
    try:
        for number, line in enumerate(rows, 1):
            if number in bad or not line.strip():
                continue
            pending.append(kept.pop(number) if number in kept else parse_import_line(line, now))
            last = number
            if len(pending) >= IMPORT_BATCH:
                flush()
        if pending:
            flush()
        indexing.run(lambda views: views.catch_up())
    finally:
        indexing.close()
    store.refresh()
    return ImportResult(imported, skipped)


class _Indexing:
    """The views kept up with an import batch by batch, when this process can take them:
    Tantivy's threads index one batch on the other core while the next is parsed, redacted
    and appended on this one (appending everything first and indexing after used one core
    at a time). With the daemon holding the views, it indexes what is appended; a full disk
    leaves them as they are to the refresh that ends the import, which says how far behind
    they are."""

    def __init__(self, store: MemoryStore) -> None:
        self.projector: Projector | None = None
        with contextlib.suppress(LockedError):
            self.projector = store.projector()

    def run(self, step: Callable[[Projector], object]) -> None:
        if self.projector is None:
            return
        try:
            step(self.projector)
        except (DiskFullError, OSError, ValueError) as exc:
            if not isinstance(exc, DiskFullError) and not is_disk_full(exc):
                raise
            self.close()

    def close(self) -> None:
        projector, self.projector = self.projector, None
        if projector is None:
            return
        try:
            projector.close()
        except (DiskFullError, OSError, ValueError) as exc:
            if not isinstance(exc, DiskFullError) and not is_disk_full(exc):
                raise


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
    row = _row(line)
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


_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_FLAT_ROW = msgspec.json.Decoder(dict[str, str | _Int | float | None])
"""An import line whose every value is a string, a number or null, read by msgspec: 4 µs a
line of 1.7 KB where ``json.loads`` and the depth walk took 13. It refuses everything
``json.loads`` refuses (tested on any text), and more: NaN, numbers past 64 bits or a
float's range, lone surrogates, a nested value. Those lines are read again by
``jsontext.parse``, so every refusal keeps its own message and the lines Python's parser
takes are taken the same."""


def _row(line: str) -> dict[str, Any]:
    """The JSON object of an import line; ``UsageError`` saying why when it is none."""
    try:
        return _FLAT_ROW.decode(line.encode("utf-8"))
    except (UnicodeEncodeError, msgspec.DecodeError):
        pass
    if not is_text(line):  # bytes that were not UTF-8, kept by surrogateescape
        raise UsageError("not UTF-8 text (a binary line?)")
    try:
        row = jsontext.parse(line)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not isinstance(row, dict):
        raise UsageError("not a JSON object")
    return row


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
    elif isinstance(value, int) and abs(value) >= 2**62:
        # Past any time, and past what a float holds (math.isfinite overflowed on it).
        raise UsageError(f"'ts' {_shown(value)} is not a time")
    else:
        seconds = float(value)
    if not math.isfinite(seconds):
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
