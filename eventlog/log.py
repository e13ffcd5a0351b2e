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

from backscroll.errors import StoreError
from backscroll.home import ensure_dir
from eventlog import codec
from eventlog.events import FRAME_TYPE, Event, FrameCaptured
from eventlog.format import (
    HEADER,
    KIND_ACTIVE,
    RECORD,
    SEGMENT_BYTES,
    TORN_SUFFIX,
    parse_segment_name,
    segment_name,
)
from eventlog.fs import REAL_FS, FileSystem
from eventlog.segment import (
    Header,
    Problem,
    Record,
    encode_sealed,
    new_active,
    now_us,
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
NEW_SUFFIX = ".new"
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

    def records(self, start: int) -> Iterator[Record]:
        """Records with offsets >= ``start``: the file is opened now (a replaced or missing one
        raises FileNotFoundError here), and read a piece at a time as they are consumed."""
        i = bisect.bisect_left(self.offsets, start)
        if i == len(self.offsets):
            return iter(())
        f = open(self.path, "rb")  # noqa: SIM115 (closed by the generator)
        if os.fstat(f.fileno()).st_ino != self.inode:
            f.close()
            raise FileNotFoundError(self.path)
        return self._stream(f, self.positions[i], self.end, start)

    def _stream(self, f: BinaryIO, pos: int, end: int, start: int) -> Iterator[Record]:
        with f:
            for scan in scan_file(f, pos, end, self.path.name, start - 1):
                for _, record in scan.records:
                    yield record


class Batch:
    """Appends collected under the lock and made durable together by one fsync."""

    def __init__(self, next_offset: int) -> None:
        self.next_offset = next_offset
        self.parts: list[bytes] = []

    def append(self, event: Event) -> int:
        offset = self.next_offset
        if isinstance(event, FrameCaptured) and event.frame_id != offset:
            raise ValueError(f"frame id {event.frame_id} is not its offset {offset}")
        payload = codec.encode(event)
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
        self, start: int = 0, types: Collection[int] | None = None
    ) -> Iterator[tuple[int, Event]]:
        for record in self.records(start, types):
            yield record.offset, codec.decode(record.payload)

    def _segment_records(
        self, segment: Segment, start: int, problems: list[Problem] | None
    ) -> Iterator[Record]:
        """Opened now (a segment swapped away raises FileNotFoundError here, never half-way),
        read as the records are consumed: a reader holds a piece of a segment, not all of it."""
        if segment.sealed:
            return read_sealed(segment.path, start, problems)
        index = self.active_index(segment.path)
        if problems is not None:
            problems.extend(index.problems)
        return index.records(start)

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
        with self.locked():
            tail = self._writable_tail()
            batch = Batch(tail.next_offset)
            yield batch
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
                raise
            finally:
                f.close()
            self._tail = tail._replace(size=tail.size + len(data), next_offset=batch.next_offset)

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
            return self._current_tail()
        index = self.active_index(path)
        for problem in index.problems:
            log.warning("event log: %s", problem)
        next_offset = index.next_offset()
        if index.torn:
            with open(path, "rb") as f:
                f.seek(index.end)
                torn = f.read()
            self._keep_torn_tail(path, torn, index.end)
            if _whole_record(torn):
                # A complete record that fails its check was written whole, so its append
                # may have returned before it was damaged: never hand its offset out again
                # (offsets may have gaps; they must never repeat). A cut-off append is short.
                next_offset += 1
        try:
            created = unpack_header(head).created_us
        except ValueError:
            created = int(stat.st_mtime * 1_000_000)
        size = path.stat().st_size
        self._tail = _Tail(path, path.stat().st_ino, size, next_offset, created)
        return self._tail

    def _keep_torn_tail(self, path: Path, torn: bytes, end: int) -> None:
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

    def _seal(self, tail: _Tail) -> None:
        assert tail.path is not None
        base = _base_of(tail.path)
        records = list(self._segment_records(Segment(base, False, tail.path), base, None))
        header = Header(KIND_ACTIVE, base, tail.created_us, end_offset=tail.next_offset)
        self._swap({segment_name(base, True): encode_sealed(header, records)}, [tail.path.name])
        self._tail = None

    # -- compaction ------------------------------------------------------------------------

    def compact(
        self,
        transform: Transform,
        select: Callable[[Segment, Header | None], bool] | None = None,
    ) -> Compacted:
        """Rewrite segments through ``transform``, keeping every offset; crash-safe.

        ``select`` picks segments (given the sealed header, or None for the active one).
        The active segment, once changed, is sealed; the next append starts a new one.
        """
        with self.locked():
            tail = self._current_tail()
            segments = self.segments()
            install: dict[str, bytes] = {}
            remove: list[str] = []
            dropped: list[tuple[int, Event]] = []
            for i, segment in enumerate(segments):
                header = _sealed_header(segment.path) if segment.sealed else None
                if select is not None and not select(segment, header):
                    continue
                kept, changed = [], False
                for record in self._segment_records(segment, segment.base, None):
                    event = codec.decode(record.payload)
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
                last = i == len(segments) - 1
                if kept or last:
                    end = header.end_offset if header else tail.next_offset
                    created = header.created_us if header else tail.created_us
                    new = Header(KIND_ACTIVE, segment.base, created, end_offset=end)
                    install[segment_name(segment.base, True)] = encode_sealed(new, kept)
                if not segment.sealed or (not kept and not last):
                    remove.append(segment.path.name)
            if install or remove:
                self._swap(install, remove)
                self._tail = None
            return Compacted(dropped, len(install), len(remove))

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
        plan = json.loads(manifest.read_bytes())
        for name in plan["install"]:
            staged = self.path / (name + NEW_SUFFIX)
            if staged.exists():
                self.fs.rename(staged, self.path / name)
        for name in plan["remove"]:
            if name not in plan["install"]:
                self.fs.remove(self.path / name)
        self.fs.fsync_dir(self.path)
        self.fs.remove(manifest)
        self.fs.fsync_dir(self.path)

    def _recover(self) -> None:
        """Finish a compaction that committed, undo one that did not."""
        if (self.path / MANIFEST_NAME).exists():
            log.warning("event log: finishing an interrupted compaction")
            self._finish_swap()
        stray = [p for p in self.path.iterdir() if p.name.endswith(NEW_SUFFIX)]
        for path in stray:
            self.fs.remove(path)
        if stray:
            self.fs.fsync_dir(self.path)
            log.warning("event log: undid an interrupted compaction (%d files)", len(stray))

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
        for segment in self.segments():
            name = segment.path.name
            data = segment.path.read_bytes()
            try:
                header = unpack_header(data)
            except ValueError as exc:
                problems.append(Problem(name, 0, None, str(exc)))
                continue
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
        return problems

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
