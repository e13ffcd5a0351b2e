"""The segmented, append-only event log on disk.

Writers (the daemon, CLI commands) append under an OS file lock; readers never take it. Only
the lock holder repairs: it finishes or undoes an interrupted compaction and copies a torn
tail aside before truncating it. A reader that meets a torn tail stops before it.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, NamedTuple

import msgspec

from base.clock import now_us
from base.errors import DiskFullError, StoreError, UsageError, is_disk_full
from base.fs import REAL_FS, FileSystem, ensure_dir
from eventlog import codec
from eventlog.events import (
    FRAME_TYPE,
    TYPE_CODES,
    DamageDiscarded,
    DamageFound,
    Event,
    FrameCaptured,
)
from eventlog.format import (
    HEADER,
    KIND_ACTIVE,
    RECORD,
    SEGMENT_BYTES,
    TORN_SUFFIX,
    parse_segment_name,
    segment_name,
)
from eventlog.segment import (
    Header,
    Problem,
    Record,
    encode_sealed,
    new_active,
    pack_header,
    read_sealed,
    record_header,
    scan_file,
    scan_records,
    unpack_header,
    write_file,
)

log = logging.getLogger(__name__)

LOCK_NAME = "LOCK"
MANIFEST_NAME = "COMPACT"
NEXT_NAME = "NEXT"
"""The next offset an append hands out, written after each append: segments that vanish
behind the log's back (deleted by hand) are noticed, and their offsets never handed out
again."""
DAMAGED_DIR = "damaged"
DAMAGED_SUFFIX = ".damaged"
NEW_SUFFIX = ".new"
DAMAGE_TYPES = {TYPE_CODES[DamageFound], TYPE_CODES[DamageDiscarded]}
WATCH_TIMEOUT_MS = 250

Transform = Callable[[int, Event], Event | None]
"""Compaction: return the event unchanged, a replacement (same offset), or None to drop it."""


class Segment(NamedTuple):
    base: int
    sealed: bool
    path: Path


class Compacted(NamedTuple):
    dropped: list[tuple[int, Event]]
    rewritten: int
    removed: int
    undecodable: int = 0
    """Records that did not decode, removed by a ``repair``."""


class _Tail(NamedTuple):
    """What an appender knows of the active segment, valid while the file is unchanged."""

    path: Path | None
    inode: int
    size: int
    next_offset: int
    created_us: int


class _ActiveIndex:
    """Offsets and byte positions of an active segment's valid records, extended as the file
    grows, so following a log re-reads only what was appended (not up to 64 MB a time)."""

    def __init__(self, path: Path, inode: int) -> None:
        self.path, self.inode = path, inode
        self.base = _base_of(path)
        self.offsets: list[int] = []
        self.positions: list[int] = []
        self.end = HEADER.size
        self.size = 0
        self.problems: list[Problem] = []

    def refresh(self) -> bool:
        """Scan what was appended since; False when the file was replaced or shrank."""
        with open(self.path, "rb") as f:
            stat = os.fstat(f.fileno())
            if stat.st_ino != self.inode or stat.st_size < self.end:
                return False
            self.size = stat.st_size
            if stat.st_size == self.end:
                return True
            after = self.offsets[-1] if self.offsets else self.base - 1
            for scan in scan_file(f, self.end, stat.st_size, self.path.name, after, payloads=False):
                for pos, record in scan.records:
                    self.offsets.append(record.offset)
                    self.positions.append(pos)
                self.problems += scan.problems
                self.end = scan.end
        return True

    @property
    def torn(self) -> bool:
        return self.size > self.end

    def next_offset(self) -> int:
        return self.offsets[-1] + 1 if self.offsets else self.base

    def records(self, start: int, problems: list[Problem] | None = None) -> Iterator[Record]:
        """Records with offsets >= ``start``: the file is opened now (a replaced or missing one
        raises FileNotFoundError here), and read a piece at a time as they are consumed; what
        fails its check as it is read goes into ``problems`` (bytes can change in place,
        behind the index)."""
        i = bisect.bisect_left(self.offsets, start)
        if i == len(self.offsets):
            return iter(())
        f = open(self.path, "rb")  # noqa: SIM115 (closed by the generator)
        if os.fstat(f.fileno()).st_ino != self.inode:
            f.close()
            raise FileNotFoundError(self.path)
        return self._stream(f, self.positions[i], self.end, start, problems)

    def _stream(
        self, f: BinaryIO, pos: int, end: int, start: int, problems: list[Problem] | None
    ) -> Iterator[Record]:
        after = start - 1
        with f:
            for scan in scan_file(f, pos, end, self.path.name, start - 1):
                if problems is not None:
                    problems.extend(scan.problems)
                    if scan.torn and scan.end < end:
                        # Bytes that changed in place behind the index (it saw valid records
                        # there): damage, not an append in progress.
                        size = end - scan.end
                        message = f"unreadable tail ({size} bytes)"
                        problems.append(Problem(self.path.name, scan.end, after + 1, message, size))
                for _, record in scan.records:
                    after = record.offset
                    yield record


class Batch:
    """Appends collected under the lock and made durable together by one fsync."""

    def __init__(self, next_offset: int) -> None:
        self.next_offset = next_offset
        self.parts: list[bytes] = []

    def append(self, event: Event) -> int:
        """Raises ``UsageError`` (nothing appended) for an event that does not decode under
        the current types: one the views could not project is never written."""
        offset = self.next_offset
        if isinstance(event, FrameCaptured) and event.frame_id != offset:
            raise ValueError(f"frame id {event.frame_id} is not its offset {offset}")
        tag = event.__struct_config__.tag
        try:
            payload = codec.encode(event)
            codec.check(payload)
        except UnicodeEncodeError as exc:
            raise UsageError(f"{tag} event refused: a string holds {exc.reason}") from None
        except msgspec.ValidationError as exc:
            raise UsageError(f"{tag} event refused: {exc}") from None
        self.parts += (record_header(codec.type_code(event), offset, payload), payload)
        self.next_offset += 1
        return offset


class Log:
    def __init__(
        self, path: Path, *, fs: FileSystem = REAL_FS, segment_bytes: int = SEGMENT_BYTES
    ) -> None:
        self.path = ensure_dir(path)
        self.fs = fs
        self.segment_bytes = segment_bytes
        self._thread_lock = threading.RLock()
        self._lock_fd: int | None = None
        self._tail: _Tail | None = None
        self._index: _ActiveIndex | None = None
        self._notes: list[Event] = []
        """Damage found by the lock holder's repairs, appended first by the next batch."""

    # -- reading (never locks) -------------------------------------------------------------

    def segments(self) -> list[Segment]:
        """Segments in offset order; where a base has both forms, the sealed one wins."""
        found: dict[int, Segment] = {}
        for entry in os.scandir(self.path):
            parsed = parse_segment_name(entry.name)
            if parsed is None:
                continue
            base, sealed = parsed
            if base not in found or sealed:
                found[base] = Segment(base, sealed, Path(entry.path))
        return [found[base] for base in sorted(found)]

    def records(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[Record]:
        """Every record with an offset >= ``start``, in order, stopping before a torn tail."""
        after = start - 1
        segments = self.segments()
        for i, segment in enumerate(segments):
            if i + 1 < len(segments) and segments[i + 1].base <= after + 1:
                continue
            try:
                batch = self._segment_records(segment, after + 1, problems)
            except FileNotFoundError:
                # A compaction swapped this segment away while we listed: list again.
                yield from self.records(after + 1, types, problems)
                return
            for record in batch:
                if record.offset > after:
                    after = record.offset
                    if types is None or record.type in types:
                        yield record

    def read(
        self,
        start: int = 0,
        types: Collection[int] | None = None,
        problems: list[Problem] | None = None,
    ) -> Iterator[tuple[int, Event]]:
        """Decoded events; one that does not decode under the current types (an older
        version's bug, a hand-made segment) is skipped and named in ``problems``."""
        for record in self.records(start, types, problems):
            event = decode_or_report(record, problems)
            if event is not None:
                yield record.offset, event

    def _segment_records(
        self, segment: Segment, start: int, problems: list[Problem] | None
    ) -> Iterator[Record]:
        """Opened now (a segment swapped away raises FileNotFoundError here, never half-way),
        read as the records are consumed: a reader holds a piece of a segment, not all of it."""
        if segment.sealed:
            return read_sealed(segment.path, start, problems)
        index = self.active_index(segment.path)
        if problems is not None and index.torn and self._lock_fd is not None:
            # Under the lock no append is in progress: bytes past the valid records are
            # damage (changed in place since they were appended), for a rewrite to keep.
            size = index.size - index.end
            message = f"unreadable tail ({size} bytes)"
            problems.append(
                Problem(segment.path.name, index.end, index.next_offset(), message, size)
            )
        return index.records(start, problems)

    def active_index(self, path: Path) -> _ActiveIndex:
        """The (cached, refreshed) index of the active segment at ``path``."""
        with self._thread_lock:
            index = self._index
            if index is None or index.path != path or not index.refresh():
                index = _ActiveIndex(path, path.stat().st_ino)
                index.refresh()
                self._index = index
            return index

    def next_offset(self) -> int:
        """The offset the next append will get (as far as a reader can tell)."""
        segments = self.segments()
        if not segments:
            return 0
        last = segments[-1]
        try:
            if last.sealed:
                return _sealed_header(last.path).end_offset
            return self.active_index(last.path).next_offset()
        except FileNotFoundError:
            # A roll or compaction swapped the segment away while we listed: list again.
            return self.next_offset()

    def mark(self) -> tuple[str, int] | None:
        """The last segment's name and size: unchanged means nothing was appended."""
        while True:
            segments = self.segments()
            if not segments:
                return None
            try:
                return segments[-1].path.name, segments[-1].path.stat().st_size
            except FileNotFoundError:
                continue  # swapped away by a roll or compaction while we listed

    def reader(self, start: int = 0) -> LogReader:
        return LogReader(self, start)

    # -- appending (under the lock) --------------------------------------------------------

    def append(self, event: Event) -> int:
        """Append one event; returns its offset once its bytes are fsynced."""
        with self.batch() as batch:
            return batch.append(event)

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        """Hold the append lock; everything appended is written and fsynced on exit.

        ``batch.next_offset`` is the id the next event will get, known before it is built
        (thumbnails and encryption bind to it). An exception inside discards the batch.
        """
        try:
            with self._batch() as batch:
                yield batch
        except OSError as exc:
            if is_disk_full(exc):
                raise DiskFullError(self.path, "append to the event log") from None
            raise

    @contextlib.contextmanager
    def _batch(self) -> Iterator[Batch]:
        with self.locked():
            tail = self._writable_tail()
            batch = Batch(tail.next_offset)
            notes, self._notes = self._notes, []
            for note in notes:  # what the repairs found goes in first, with the batch
                batch.append(note)
            try:
                yield batch
            except BaseException:
                self._notes = notes + self._notes
                raise
            if not batch.parts:
                return
            data = b"".join(batch.parts)
            assert tail.path is not None
            f = self.fs.append(tail.path)
            try:
                f.write(data)
                f.fsync()
            except BaseException:
                # Leave no half batch behind: the next lock holder would see a torn tail.
                with contextlib.suppress(OSError):
                    f.truncate(tail.size)
                self._notes = notes + self._notes
                raise
            finally:
                f.close()
            self._tail = tail._replace(size=tail.size + len(data), next_offset=batch.next_offset)
            self._write_next(batch.next_offset)

    def _write_next(self, offset: int) -> None:
        """Not fsynced: after a power cut it may be older than the segments, never newer (it
        is written after their fsync), and the larger of the two wins."""
        with contextlib.suppress(OSError):
            f = self.fs.create(self.path / NEXT_NAME)
            try:
                f.write(offset.to_bytes(8, "little"))
            finally:
                f.close()

    def _read_next(self) -> int:
        try:
            data = (self.path / NEXT_NAME).read_bytes()
        except OSError:
            return 0
        return int.from_bytes(data, "little") if len(data) == 8 else 0

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._thread_lock:
            if self._lock_fd is not None:  # re-entered by this thread
                yield
                return
            fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._lock_fd = fd
                self._recover()
                yield
            finally:
                self._lock_fd = None
                os.close(fd)  # closing releases the flock

    def _writable_tail(self) -> _Tail:
        tail = self._current_tail()
        if tail.path is not None and tail.next_offset > _base_of(tail.path):
            full = tail.size >= self.segment_bytes
            new_day = _utc_day(tail.created_us) != _utc_day(now_us())
            if full or new_day:
                self._seal(tail)
                tail = self._current_tail()
        if tail.path is None:
            path = self.path / segment_name(tail.next_offset, sealed=False)
            new_active(self.fs, path, tail.next_offset)
            self._tail = None
            tail = self._current_tail()
        return tail

    def _current_tail(self) -> _Tail:
        """The active segment's state, re-scanned only when another process changed it."""
        tail = self._scan_tail()
        handed_out = self._read_next()
        if handed_out <= tail.next_offset:
            return tail
        if not any(
            isinstance(n, DamageFound) and n.first_offset == tail.next_offset for n in self._notes
        ):
            # Offsets up to here were handed out but no segment holds them any more: a
            # segment was deleted behind the log's back. Say so; never hand them out again.
            self._notes.append(
                DamageFound(
                    ts_us=now_us(),
                    segment="",
                    first_offset=tail.next_offset,
                    last_offset=handed_out - 1,
                    rewrite="recovery",
                )
            )
            log.warning(
                "event log: offsets %d..%d are missing (a segment was deleted?)",
                tail.next_offset,
                handed_out - 1,
            )
        tail = self._tail = tail._replace(next_offset=handed_out)
        return tail

    def lost_tail(self) -> tuple[int, int] | None:
        """The offsets handed out that no segment holds any more, as a reader can tell
        before the next writer records their loss."""
        handed_out = self._read_next()
        tail = self.next_offset()
        return (tail, handed_out - 1) if handed_out > tail else None

    def _scan_tail(self) -> _Tail:
        segments = self.segments()
        if not segments or segments[-1].sealed:
            end = _sealed_header(segments[-1].path).end_offset if segments else 0
            return _Tail(None, 0, 0, end, 0)
        path = segments[-1].path
        stat = path.stat()
        cached = self._tail
        if (
            cached
            and cached.path == path
            and (cached.inode, cached.size)
            == (
                stat.st_ino,
                stat.st_size,
            )
        ):
            return cached
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
        if len(head) < HEADER.size:
            # A short file is a crash while its header was written: all of it is torn.
            self._keep_torn_tail(path, head, 0)
            return self._scan_tail()
        index = self.active_index(path)
        for problem in index.problems:
            log.warning("event log: %s", problem)
        next_offset = index.next_offset()
        if index.torn:
            with open(path, "rb") as f:
                f.seek(index.end)
                torn = f.read()
            aside = self._keep_torn_tail(path, torn, index.end)
            if _whole_record(torn):
                # A complete record that fails its check was written whole, so its append
                # may have returned before it was damaged: never hand its offset out again
                # (offsets may have gaps; they must never repeat), and report it as damage
                # until the person discards it. A cut-off append is short: never acknowledged.
                self._notes.append(
                    DamageFound(
                        ts_us=now_us(),
                        segment=path.name,
                        position=index.end,
                        length=len(torn),
                        first_offset=next_offset,
                        last_offset=next_offset,
                        aside=aside.name,
                        rewrite="recovery",
                    )
                )
                next_offset += 1
        try:
            created = unpack_header(head).created_us
        except ValueError:
            created = int(stat.st_mtime * 1_000_000)
        size = path.stat().st_size
        self._tail = _Tail(path, path.stat().st_ino, size, next_offset, created)
        return self._tail

    def _keep_torn_tail(self, path: Path, torn: bytes, end: int) -> Path:
        """Copy the torn bytes aside, then truncate: recovery never silently drops bytes.

        ``end`` is where the valid records end (0 when even the header is incomplete).
        """
        aside = path.with_name(f"{path.name}.{end}{TORN_SUFFIX}")
        for n in itertools.count(1):  # torn twice at the same place: keep both
            if not aside.exists():
                break
            aside = path.with_name(f"{path.name}.{end}.{n}{TORN_SUFFIX}")
        write_file(self.fs, aside, torn)
        # The copy must be durable before the truncation is: a power cut between them
        # would otherwise lose the torn bytes.
        self.fs.fsync_dir(self.path)
        f = self.fs.append(path)
        try:
            f.truncate(end)
            if end == 0:
                # The crash hit while the header was written: write it again.
                f.write(pack_header(Header(KIND_ACTIVE, _base_of(path), now_us())))
            f.fsync()
        finally:
            f.close()
        self._index = None
        log.warning(
            "event log: torn tail of %d bytes in %s kept aside as %s",
            len(torn),
            path.name,
            aside.name,
        )
        return aside

    def _seal(self, tail: _Tail) -> None:
        assert tail.path is not None
        base = _base_of(tail.path)
        segment = Segment(base, False, tail.path)
        problems: list[Problem] = []
        records = list(self._segment_records(segment, base, problems))
        self._keep_aside(segment, problems, records, tail.next_offset, "sealing")
        header = Header(KIND_ACTIVE, base, tail.created_us, end_offset=tail.next_offset)
        self._swap({segment_name(base, True): encode_sealed(header, records)}, [tail.path.name])
        self._tail = None

    def _keep_aside(
        self,
        segment: Segment,
        problems: list[Problem],
        records: list[Record],
        end_offset: int,
        rewrite: str,
    ) -> None:
        """Before a rewrite replaces ``segment`` with its readable ``records``: no rewrite
        makes damage disappear, so every unreadable range is copied aside byte for byte (and
        fsynced), and a ``DamageFound`` for it goes into the next batch."""
        ranges = [p for p in problems if p.length]
        if not ranges:
            return
        folder = ensure_dir(self.path / DAMAGED_DIR)
        with open(segment.path, "rb") as f:
            for problem in ranges:
                f.seek(problem.position)
                data = f.read(problem.length)
                name = f"{segment.path.name}.{problem.position}{DAMAGED_SUFFIX}"
                write_file(self.fs, folder / name, data)
                first = problem.offset if problem.offset is not None else segment.base
                later = bisect.bisect_left([r.offset for r in records], first)
                last = (records[later].offset if later < len(records) else end_offset) - 1
                self._notes.append(
                    DamageFound(
                        ts_us=now_us(),
                        segment=segment.path.name,
                        position=problem.position,
                        length=len(data),
                        first_offset=first,
                        last_offset=max(last, first - 1),
                        aside=f"{DAMAGED_DIR}/{name}",
                        rewrite=rewrite,
                    )
                )
                log.warning("event log: %s; kept aside as %s/%s", problem, DAMAGED_DIR, name)
        # The copies must be durable before the rewrite that leaves the bytes out commits.
        self.fs.fsync_dir(folder)
        self.fs.fsync_dir(self.path)

    def damaged(self) -> list[Path]:
        """The copies of unreadable ranges kept aside, oldest first."""
        folder = self.path / DAMAGED_DIR
        if not folder.is_dir():
            return []
        return sorted(folder.iterdir())

    # -- compaction ------------------------------------------------------------------------

    def compact(
        self,
        transform: Transform,
        select: Callable[[Segment, Header | None], bool] | None = None,
        *,
        repair: bool = False,
    ) -> Compacted:
        """Rewrite segments through ``transform``, keeping every offset; crash-safe.

        ``select`` picks segments (given the sealed header, or None for the active one).
        The active segment, once changed, is sealed; the next append starts a new one.
        Records that do not decode pass through as they are, and a rewritten segment's
        unreadable bytes are kept aside; with ``repair``, segments holding either are
        rewritten without them (the person's ``clear --damaged``).
        """
        try:
            return self._compact(transform, select, repair)
        except OSError as exc:
            if is_disk_full(exc):
                raise DiskFullError(self.path, "rewrite the event log") from None
            raise

    def _compact(
        self,
        transform: Transform,
        select: Callable[[Segment, Header | None], bool] | None,
        repair: bool,
    ) -> Compacted:
        with self.locked():
            tail = self._current_tail()
            segments = self.segments()
            install: dict[str, bytes] = {}
            remove: list[str] = []
            dropped: list[tuple[int, Event]] = []
            undecodable = 0
            empty_before: tuple[int, int] | None = None  # (base, created) of an empty one
            for segment in segments:
                header = _sealed_header(segment.path) if segment.sealed else None
                created = header.created_us if header else tail.created_us
                was_empty = header is not None and header.frames + header.controls == 0
                previous, empty_before = (
                    empty_before,
                    ((segment.base, created) if was_empty else None),
                )
                if select is not None and not select(segment, header):
                    continue
                kept: list[Record] = []
                end = header.end_offset if header else tail.next_offset
                problems: list[Problem] = []
                records = list(self._segment_records(segment, segment.base, problems))
                changed = repair and any(p.length for p in problems)
                for record in records:
                    event = decode_or_report(record, None)
                    if event is None:  # verify names it; the person decides (``repair``)
                        if repair:
                            changed = True
                            undecodable += 1
                        else:
                            kept.append(record)
                        continue
                    result = transform(record.offset, event)
                    if result is event:
                        kept.append(record)
                        continue
                    changed = True
                    if result is None:
                        dropped.append((record.offset, event))
                    else:
                        payload = codec.encode(result)
                        kept.append(Record(record.offset, codec.type_code(result), payload))
                if not changed:
                    continue
                self._keep_aside(segment, problems, records, end, "compaction")
                # A segment left empty stays, as a header that covers its offsets (merged
                # into an empty one just before it): the segments tile the log from offset
                # 0, so one deleted by hand is a gap that verify sees.
                base = segment.base
                if not kept and previous is not None:
                    base, created = previous
                    install.pop(segment_name(segment.base, True), None)
                    remove.append(segment.path.name)
                elif not segment.sealed:
                    remove.append(segment.path.name)
                new = Header(KIND_ACTIVE, base, created, end_offset=end)
                install[segment_name(base, True)] = encode_sealed(new, kept)
                empty_before = (base, created) if not kept else None
            if install or remove:
                self._swap(install, remove)
                self._tail = None
            if self._notes:
                with self.batch():
                    pass  # the damage the rewrite found, recorded
            return Compacted(dropped, len(install), len(remove), undecodable)

    def retain(self, cutoff_us: int) -> Compacted:
        """Drop frames captured before ``cutoff_us``; control events never expire."""

        def expired(offset: int, event: Event) -> Event | None:
            old = isinstance(event, FrameCaptured) and event.captured_us < cutoff_us
            return None if old else event

        def holds_old(segment: Segment, header: Header | None) -> bool:
            return header is None or (header.frames > 0 and header.min_captured_us < cutoff_us)

        return self.compact(expired, holds_old)

    def _swap(self, install: dict[str, bytes], remove: list[str]) -> None:
        """Write the new files, commit by writing the manifest, then rename and delete."""
        for name, data in install.items():
            write_file(self.fs, self.path / (name + NEW_SUFFIX), data)
        # The new files' names must be durable before the commit point: a filesystem that does
        # not order folder changes could otherwise keep the manifest and lose a new file.
        self.fs.fsync_dir(self.path)
        manifest = json.dumps({"install": sorted(install), "remove": sorted(remove)}).encode()
        tmp = self.path / (MANIFEST_NAME + NEW_SUFFIX)
        write_file(self.fs, tmp, manifest)
        self.fs.rename(tmp, self.path / MANIFEST_NAME)
        self.fs.fsync_dir(self.path)
        self._finish_swap()

    def _finish_swap(self) -> None:
        manifest = self.path / MANIFEST_NAME
        try:
            plan = json.loads(manifest.read_bytes())
            install, remove = list(plan["install"]), list(plan["remove"])
        except (ValueError, TypeError, KeyError):
            # The manifest exists only once the compaction committed, so finish it: install
            # every staged file, and remove what a swap removes, an active segment whose
            # sealed form is installed.
            staged = (p.name.removesuffix(NEW_SUFFIX) for p in self._staged())
            install = [name for name in staged if parse_segment_name(name)]
            sealed = {parse_segment_name(name) for name in install}
            remove = [
                s.path.name
                for s in self._all_segment_files()
                if not s.sealed and (s.base, True) in sealed
            ]
            log.warning("event log: the compaction manifest is damaged; finished from the files")
        for name in install:
            staged = self.path / (name + NEW_SUFFIX)
            if staged.exists():
                self.fs.rename(staged, self.path / name)
        for name in remove:
            if name not in install:
                self.fs.remove(self.path / name)
        self.fs.fsync_dir(self.path)
        self.fs.remove(manifest)
        self.fs.fsync_dir(self.path)

    def _recover(self) -> None:
        """Finish a compaction that committed, undo one that did not."""
        if (self.path / MANIFEST_NAME).exists():
            log.warning("event log: finishing an interrupted compaction")
            self._finish_swap()
        stray = self._staged()
        for path in stray:
            self.fs.remove(path)
        if stray:
            self.fs.fsync_dir(self.path)
            log.warning("event log: undid an interrupted compaction (%d files)", len(stray))

    def _staged(self) -> list[Path]:
        return [p for p in self.path.iterdir() if p.name.endswith(NEW_SUFFIX)]

    def _all_segment_files(self) -> list[Segment]:
        out = []
        for entry in os.scandir(self.path):
            parsed = parse_segment_name(entry.name)
            if parsed is not None:
                out.append(Segment(parsed[0], parsed[1], Path(entry.path)))
        return out

    # -- checking --------------------------------------------------------------------------

    def verify(self) -> list[Problem]:
        """Check every segment's header, framing, CRCs and the order of offsets.

        While another process holds the append lock, a pending compaction or a partial
        record at the very end is work in progress, not damage: it is not reported.
        """
        writing = self._writer_active()
        while True:
            try:
                return self._verify_once(writing)
            except FileNotFoundError:
                continue  # a roll or compaction swapped a segment away: check again

    def _writer_active(self) -> bool:
        if self._lock_fd is not None:
            return False  # we are the writer
        fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _verify_once(self, writing: bool) -> list[Problem]:
        problems: list[Problem] = []
        if (self.path / MANIFEST_NAME).exists() and not writing:
            problems.append(Problem(MANIFEST_NAME, 0, None, "an interrupted compaction is pending"))
        previous = -1
        covered = 0  # segments tile the offsets from 0: a gap is a segment gone
        gaps: list[tuple[str, int, int]] = []
        found: dict[int, DamageFound] = {}
        discarded = -1
        for segment in self.segments():
            name = segment.path.name
            data = segment.path.read_bytes()
            if segment.base > covered:
                gaps.append((name, covered, segment.base - 1))
            try:
                header = unpack_header(data)
            except ValueError as exc:
                problems.append(Problem(name, 0, None, str(exc)))
                continue
            if segment.sealed:
                covered = max(covered, header.end_offset)
            if header.base_offset != segment.base:
                problems.append(Problem(name, 0, None, "header base offset differs from name"))
            if segment.sealed:
                records = list(read_sealed(segment.path, 0, problems))
                frames = sum(r.type == FRAME_TYPE for r in records)
                if frames != header.frames or len(records) - frames != header.controls:
                    problems.append(Problem(name, 0, None, "header counts differ from records"))
            else:
                scan = scan_records(data, HEADER.size, name, segment.base - 1)
                problems.extend(scan.problems)
                if scan.torn and not writing:
                    problems.append(
                        Problem(name, scan.end, None, f"torn tail of {len(data) - scan.end} bytes")
                    )
                records = [record for _, record in scan.records]
            for record in records:
                if record.offset <= previous or record.offset < segment.base:
                    problems.append(Problem(name, 0, record.offset, "offset out of order"))
                previous = max(previous, record.offset)
                event = decode_or_report(record, problems)
                if isinstance(event, DamageFound):
                    found[record.offset] = event
                elif isinstance(event, DamageDiscarded):
                    discarded = max(discarded, event.upto_id)
        tail = max(previous + 1, covered)
        handed_out = self._read_next()
        if handed_out > tail and not writing:
            gaps.append(("", tail, handed_out - 1))
        problems += self._damage_problems(found, discarded, gaps)
        return problems

    def _damage_problems(
        self, found: dict[int, DamageFound], discarded: int, gaps: list[tuple[str, int, int]]
    ) -> list[Problem]:
        """What was kept aside or lost and not yet discarded by the person."""
        problems: list[Problem] = []
        lost = [(d.first_offset, d.last_offset) for d in found.values() if not d.aside]
        for name, lo, hi in gaps:
            if not any(a <= lo and hi <= b for a, b in lost):
                problems.append(
                    Problem(name, 0, lo, f"offsets {lo}..{hi} are missing: a segment was deleted")
                )
        described = set()
        for offset, damage in sorted(found.items()):
            described.add(damage.aside)
            if offset <= discarded:
                continue
            held = (
                f"offsets {damage.first_offset}..{damage.last_offset}"
                if damage.last_offset >= damage.first_offset
                else "no offset"
            )
            if not damage.aside:
                message = (
                    f"lost {held}: their segment was deleted or cut short behind the log's back"
                )
            elif self._aside_path(damage.aside) is not None:
                message = (
                    f"{damage.length} unreadable bytes (may have held {held}) kept aside as "
                    f"log/{damage.aside} by {damage.rewrite}"
                )
            else:
                message = f"{damage.length} unreadable bytes ({held}): the copy kept aside is gone"
            where = damage.segment if damage.aside else ""
            problems.append(
                Problem(where, damage.position, damage.first_offset, message, damage.length)
            )
        for path in self.damaged():
            if f"{DAMAGED_DIR}/{path.name}" not in described:
                size = path.stat().st_size
                problems.append(Problem(path.name, 0, None, "unreadable bytes kept aside", size))
        return problems

    def kept_aside(self) -> list[Path]:
        """Every copy of unreadable bytes that the person has not discarded: what the
        rewrites kept in ``damaged/`` and torn records that may have been acknowledged."""
        paths = set(self.damaged())
        for _, event in self.read(types={TYPE_CODES[DamageFound]}):
            if isinstance(event, DamageFound) and event.aside:
                path = self._aside_path(event.aside)
                if path is not None:
                    paths.add(path)
        return sorted(paths)

    def _aside_path(self, aside: str) -> Path | None:
        """The copy an event names, if it exists and is one the log makes: a hand-made event
        must not point ``clear --damaged`` at any other file."""
        path = self.path / aside
        own = path.parent in (self.path, self.path / DAMAGED_DIR) and path.name.endswith(
            (DAMAGED_SUFFIX, TORN_SUFFIX)
        )
        return path if own and ".." not in Path(aside).parts and path.is_file() else None

    def disk_bytes(self) -> int:
        while True:
            try:
                return sum(s.path.stat().st_size for s in self.segments())
            except FileNotFoundError:
                continue  # a roll or compaction swapped a segment away: count again


class LogReader:
    """Reads new records incrementally: for follow mode and catching up views."""

    def __init__(self, log: Log, start: int = 0) -> None:
        self.log = log
        self.after = start - 1
        self._changes: Iterator[object] | None = None

    def poll(self, limit: int | None = None) -> list[Record]:
        out: list[Record] = []
        for record in self.log.records(self.after + 1):
            out.append(record)
            self.after = record.offset
            if limit is not None and len(out) >= limit:
                break
        return out

    def wait(
        self, timeout: float, stop: threading.Event | None = None, also: Sequence[Path] = ()
    ) -> None:
        """Block until the log folder (or a path in ``also``) changes, ``timeout`` passes or
        ``stop`` is set.

        One watcher serves every call (the first call's ``stop`` and ``also`` stay): it
        keeps collecting changes between calls, so an append made while the caller was
        catching up wakes the next call at once instead of being missed until the timeout.
        The first call only starts the watcher and returns: an append made before it was
        watching (as the caller last caught up) is for the caller's next poll to find; it
        waited out a whole timeout before (5 s, once in 100 appends in bench.projector).
        """
        if self._changes is None:
            self._changes = self._watch(stop, also)
            next(self._changes, None)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            changes = next(self._changes, None)
            if changes is None or changes:  # stopped, or something changed
                return

    def _watch(self, stop: threading.Event | None, also: Sequence[Path]) -> Iterator[object]:
        import watchfiles

        # Files are watched through their folders, not by path: a file replaced by an
        # atomic rename would leave a path watch on the old inode.
        wanted = {str(path) for path in also}
        folder = str(self.log.path)

        def keep(change: object, path: str) -> bool:
            return path in wanted or os.path.dirname(path) == folder

        # 50 ms debounce, not watchfiles' 1.6 s default: new frames are searchable in 2 s.
        # A 50 ms step (how often the watcher looks up from waiting), not 10: at 10 the idle
        # daemon's follower alone used 0.7% of a core. The watcher hands back to Python every
        # WATCH_TIMEOUT_MS when nothing changed, and ``wait`` keeps its own deadline.
        return iter(
            watchfiles.watch(
                self.log.path,
                *{path.parent for path in also},
                watch_filter=keep,
                recursive=False,
                debounce=50,
                step=50,
                rust_timeout=WATCH_TIMEOUT_MS,
                yield_on_timeout=True,
                stop_event=stop,
            )
        )


def decode_or_report(record: Record, problems: list[Problem] | None) -> Event | None:
    """The record's event, or None (named in ``problems``) when it does not decode under the
    current types."""
    try:
        return codec.decode(record.payload)
    except (ValueError, KeyError, TypeError) as exc:  # msgspec's errors are ValueErrors
        if problems is not None:
            cls = codec.CODE_TYPES.get(record.type)
            kind = f"{cls.__struct_config__.tag} event" if cls else f"event of type {record.type}"
            problems.append(Problem("", 0, record.offset, f"{kind} does not decode: {exc}"))
        return None


def _whole_record(data: bytes) -> bool:
    """Whether ``data`` starts with as many bytes as its record header declares."""
    return len(data) >= RECORD.size and len(data) >= RECORD.size + RECORD.unpack_from(data)[0]


def _base_of(path: Path) -> int:
    return int(path.name.split(".", 1)[0])


def _utc_day(us: int) -> str:
    return datetime.fromtimestamp(us / 1_000_000, UTC).strftime("%Y-%m-%d")


def _sealed_header(path: Path) -> Header:
    with open(path, "rb") as f:
        data = f.read(HEADER.size)
    try:
        return unpack_header(data)
    except ValueError as exc:
        raise StoreError(f"event log segment {path.name} is damaged: {exc}") from None
