"""``backscroll import``: frames given as JSON Lines, checked whole before any is appended."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from backscroll._import_lines import (
    CHUNK_LINES,
    Chunk,
    Preparer,
    Preparing,
    parse_import_line,
    workers_for,
)
from backscroll.record import Prepared, append_frame
from backscroll.store import MemoryStore
from base.clock import now_us
from base.errors import DiskFullError, LockedError, UsageError, is_disk_full
from capture.seen import Seen

if TYPE_CHECKING:
    from projector.runner import Projector

__all__ = ["IMPORT_BATCH", "KEEP_CHARACTERS", "ImportResult", "import_frames", "parse_import_line"]

IMPORT_BATCH = 1000
KEEP_CHARACTERS = 64_000_000
"""The lines the check keeps as it read them (the first 64 MB of text, ~38,000 frames of
1.7 KB), so that they are not read a second time (~8 µs a line); the rest is read again,
so that a file of any size fits in memory."""


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
        return _import(store, lines, sum(map(len, lines)), skip_bad, progress)
    seekable = getattr(lines, "seekable", None)
    if seekable is not None and seekable():
        return _import(store, _Rereadable(lines), _size(lines), skip_bad, progress)
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
        return _import(store, _Rereadable(spool), _size(spool), skip_bad, progress)


def _size(file: Any) -> int:
    """The bytes of an open file; 0 when it has no file descriptor (an in-memory stream)."""
    try:
        return os.fstat(file.fileno()).st_size
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return 0


def _import(
    store: MemoryStore,
    rows: Iterable[str],
    size: int,
    skip_bad: bool,
    progress: Callable[[int], None] | None,
) -> ImportResult:
    preparing = Preparing(workers_for(size))
    try:
        return _checked_and_appended(store, rows, preparing, skip_bad, progress)
    finally:
        preparing.close()


def _checked_and_appended(
    store: MemoryStore,
    rows: Iterable[str],
    preparing: Preparing,
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
    blinder = crypto.blinder if config.encrypt_text and crypto is not None else None
    preparer = Preparer(now, config.redact, blinder)
    pending: list[Prepared] = []
    imported = last = through = 0

    def flush() -> None:
        nonlocal imported, through
        try:
            with store.log.batch() as batch:
                for prepared in pending:
                    append_frame(batch, prepared, config, crypto, store.home)
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
        for ready in preparing.map(preparer, _chunks(rows, bad, kept)):
            for number, prepared in ready:
                if isinstance(prepared, str):  # good when checked: an image file changed since
                    raise UsageError(f"line {number}: {prepared}")
                pending.append(prepared)
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


def _chunks(rows: Iterable[str], bad: set[int], kept: dict[int, Seen]) -> Iterator[Chunk]:
    """The numbered lines to import, ``CHUNK_LINES`` at a time: not blank, not skipped, and
    those the check kept as it read them."""
    numbered = (
        (number, kept.pop(number, line))
        for number, line in enumerate(rows, 1)
        if number not in bad and line.strip()
    )
    while chunk := list(islice(numbered, CHUNK_LINES)):
        yield chunk


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
