"""The segmented, append-only event log on disk.

Writers (the daemon, CLI commands) append under an OS file lock; readers never take it. Only
the lock holder repairs: it finishes or undoes an interrupted compaction and copies a torn
tail aside before truncating it. A reader that meets a torn tail stops before it.

The parts live beside it: ``active`` indexes the active segment, ``batch`` frames appends,
``swap`` replaces segment files crash-safely, ``damage`` keeps unreadable bytes aside,
``compaction`` passes records through a transform, ``verification`` checks the folder and
``reader`` follows it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from base.clock import now_us
from base.errors import CorruptionError, DiskFullError, is_disk_full
from base.fs import FileSystem, current, ensure_dir
from eventlog import damage, verification
from eventlog._warn import warn
from eventlog.active import ActiveIndex
from eventlog.batch import Batch
from eventlog.codec import decode_or_report
from eventlog.compaction import Compacted, Transform, expired, rewrite
from eventlog.events import TYPE_CODES, DamageFound, Event
from eventlog.folder import (
    Segment,
    base_of,
    list_segments,
    lock_writer,
    read_next,
    sealed_or_stand_in,
    write_next,
    writer_active,
)
from eventlog.format import HEADER, KIND_SEALED, SEGMENT_BYTES, segment_name
from eventlog.reader import LogReader
from eventlog.segment import (
    Header,
    Problem,
    Record,
    encode_sealed,
    new_active,
    read_sealed,
    tail_from,
    unpack_header,
)
from eventlog.swap import recover, swap

if TYPE_CHECKING:
    from eventlog.contract import EventLog


class _Tail(NamedTuple):
    """What an appender knows of the active segment, valid while the file is unchanged."""

    path: Path | None
    inode: int
    size: int
    next_offset: int
    created_us: int


class Log:
    def __init__(
        self, path: Path, *, fs: FileSystem | None = None, segment_bytes: int = SEGMENT_BYTES
    ) -> None:
        self.path = path  # made by the first append: a reader creates nothing
        self.fs = fs or current()
        self.segment_bytes = segment_bytes
        self._thread_lock = threading.RLock()
        self._lock_fd: int | None = None
        self._tail: _Tail | None = None
        self._index: ActiveIndex | None = None
        self._notes: list[Event] = []
        """Damage found by the lock holder's repairs, appended first by the next batch."""

    # -- reading (never locks) -------------------------------------------------------------

    def segments(self) -> list[Segment]:
        """Segments in offset order; where a base has both forms, the sealed one wins."""
        return list_segments(self.path)

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
        if problems is None and start > segment.base and not self._indexed(segment.path):
            # A reader a few events behind: those events, read from the segment's end.
            tail = tail_from(segment.path, start)
            if tail is not None:
                return iter(tail)
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

    def _indexed(self, path: Path) -> bool:
        """Whether this log already holds an index of the active segment at ``path``: then
        bringing it up to date reads only what was appended since."""
        return self._index is not None and self._index.path == path

    def active_index(self, path: Path) -> ActiveIndex:
        """The (cached, refreshed) index of the active segment at ``path``."""
        with self._thread_lock:
            index = self._index
            if index is None or index.path != path or not index.refresh():
                index = ActiveIndex(path, path.stat().st_ino)
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
                return sealed_or_stand_in(last, []).header.end_offset
            handed_out = read_next(self.path) or 0
            if (
                handed_out > last.base
                and not self._indexed(last.path)
                and tail_from(last.path, handed_out - 1)
            ):
                # The segment ends with the last offset handed out: no need to read the rest.
                return handed_out
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
        """A follower, for the views' writer: it watches the folder, so the folder is made."""
        ensure_dir(self.path)
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
            write_next(self.fs, self.path, batch.next_offset)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._thread_lock:
            if self._lock_fd is not None:  # re-entered by this thread
                yield
                return
            fd = lock_writer(ensure_dir(self.path))
            try:
                self._lock_fd = fd
                recover(self.fs, self.path)
                yield
            finally:
                self._lock_fd = None
                os.close(fd)  # closing releases the flock

    def _writable_tail(self) -> _Tail:
        tail = self._current_tail()
        if tail.path is not None and tail.next_offset > base_of(tail.path):
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
        handed_out = read_next(self.path)
        if handed_out is None:
            # A flipped bit, not offsets handed out: the segments say where the log is.
            warn(__name__, "event log: NEXT is damaged; rebuilt from the segments")
            write_next(self.fs, self.path, tail.next_offset)
            return tail
        if handed_out <= tail.next_offset:
            return tail
        if not any(
            isinstance(n, DamageFound) and n.first_offset == tail.next_offset for n in self._notes
        ):
            # Handed out, but no segment holds them any more: never hand them out again.
            self._notes.append(damage.offsets_lost(tail.next_offset, handed_out - 1))
        tail = self._tail = tail._replace(next_offset=handed_out)
        return tail

    def lost_tail(self) -> tuple[int, int] | None:
        """The offsets handed out that no segment holds any more, as a reader can tell
        before the next writer records their loss."""
        handed_out = read_next(self.path) or 0
        tail = self.next_offset()
        return (tail, handed_out - 1) if handed_out > tail else None

    def _scan_tail(self) -> _Tail:
        segments = self.segments()
        if not segments or segments[-1].sealed:
            end = sealed_or_stand_in(segments[-1], []).header.end_offset if segments else 0
            return _Tail(None, 0, 0, end, 0)
        path = segments[-1].path
        stat = path.stat()
        cached = self._tail
        if cached and (cached.path, cached.inode, cached.size) == (path, stat.st_ino, stat.st_size):
            return cached
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
        if len(head) < HEADER.size:
            # A short file is a crash while its header was written: all of it is torn.
            damage.keep_torn_tail(self.fs, self.path, path, head, 0)
            self._index = None
            return self._scan_tail()
        index = self.active_index(path)
        for problem in index.problems:
            warn(__name__, "event log: %s", problem)
        next_offset = index.next_offset()
        if index.torn:
            with open(path, "rb") as f:
                f.seek(index.end)
                torn = f.read()
            aside = damage.keep_torn_tail(self.fs, self.path, path, torn, index.end)
            self._index = None
            found = damage.torn_record(path, index.end, torn, next_offset, aside)
            if found is not None:
                self._notes.append(found)
                next_offset += 1  # offsets may have gaps; they must never repeat
        try:
            created = unpack_header(head).created_us
        except CorruptionError:
            created = int(stat.st_mtime * 1_000_000)
        size = path.stat().st_size
        self._tail = _Tail(path, path.stat().st_ino, size, next_offset, created)
        return self._tail

    def _seal(self, tail: _Tail) -> None:
        assert tail.path is not None
        base = base_of(tail.path)
        segment = Segment(base, False, tail.path)
        problems: list[Problem] = []
        records = list(self._segment_records(segment, base, problems))
        self._notes += damage.keep_aside(
            self.fs, self.path, segment, problems, records, tail.next_offset, "sealing"
        )
        header = Header(KIND_SEALED, base, tail.created_us, end_offset=tail.next_offset)
        install = {segment_name(base, True): encode_sealed(header, records)}
        swap(self.fs, self.path, install, [tail.path.name])
        self._tail = None

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
        Records that do not decode pass through as they are; a segment's unreadable bytes
        are kept aside and the segment rewritten without them. With ``repair``, segments
        holding records that do not decode are rewritten without them too (the person's
        ``clear --damaged``).
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
            rewritten = undecodable = 0
            empty_before: tuple[int, int] | None = None  # (base, created) of an empty one
            for i, segment in enumerate(segments):
                problems: list[Problem] = []
                header = None
                if segment.sealed:
                    header, broken, foreign = sealed_or_stand_in(segment, segments[i + 1 :])
                    if foreign and not repair:
                        # Rewritten here, its records would be guessed at, or kept aside.
                        raise CorruptionError(
                            f"event log segment {segment.path.name}: {broken} (a newer "
                            "Backscroll wrote it; clear --damaged rewrites it as this one "
                            "reads it)"
                        )
                    if broken is not None:
                        # Kept aside and rewritten like any damage: the stand-in replaces it.
                        problems.append(Problem(segment.path.name, 0, None, broken, HEADER.size))
                created = header.created_us if header else tail.created_us
                # (A stand-in's counts are unknown: its segment is never taken for empty.)
                counts = (header.frames, header.controls) if header and not problems else None
                was_empty = counts == (0, 0)
                previous, empty_before = (
                    empty_before,
                    ((segment.base, created) if was_empty else None),
                )
                if select is not None and not problems and not select(segment, header):
                    continue  # (a stand-in's summary is unknown: its segment is read)
                end = header.end_offset if header else tail.next_offset
                records = list(self._segment_records(segment, segment.base, problems))
                run = rewrite(records, transform, repair)
                # Unreadable bytes may hold what the transform drops (a deletion's frames):
                # the segment is rewritten, the bytes kept aside, where a deletion reaches them
                # (``remove_aside``). Left in place, a deletion was complete with its frames'
                # text still in the segment.
                if not run.changed and not any(p.length for p in problems):
                    continue
                dropped += run.dropped
                rewritten += run.rewritten
                undecodable += run.undecodable
                self._notes += damage.keep_aside(
                    self.fs, self.path, segment, problems, records, end, "compaction"
                )
                kept = run.kept
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
                new = Header(KIND_SEALED, base, created, end_offset=end)
                install[segment_name(base, True)] = encode_sealed(new, kept)
                empty_before = (base, created) if not kept else None
            if install or remove:
                swap(self.fs, self.path, install, remove)
                self._tail = None
            if self._notes:
                with self.batch():
                    pass  # the damage the rewrite found, recorded
            return Compacted(dropped, rewritten, undecodable)

    def retain(self, cutoff_us: int) -> Compacted:
        """Drop frames captured before ``cutoff_us``; control events never expire. Only the
        segments that may hold such frames are read (their headers say)."""

        def holds_old(segment: Segment, header: Header | None) -> bool:
            return header is None or (header.frames > 0 and header.min_captured_us < cutoff_us)

        return self.compact(expired(cutoff_us), holds_old)

    # -- checking --------------------------------------------------------------------------

    def verify(self) -> list[Problem]:
        """Check every segment's header, framing, CRCs and the order of offsets, and the
        damage not yet discarded (``eventlog.verification``)."""
        return verification.verify(
            self.path, writing=self._lock_fd is None and writer_active(self.path)
        )

    def damaged(self) -> list[Path]:
        """The copies of unreadable ranges kept aside, oldest first."""
        return damage.damaged(self.path)

    def kept_aside(self) -> list[Path]:
        """Every copy of unreadable bytes that the person has not discarded: what the
        rewrites kept in ``damaged/`` and the torn tails, acknowledged or not."""
        paths = set(damage.damaged(self.path)) | set(damage.torn_tails(self.path))
        for _, event in self.read(types={TYPE_CODES[DamageFound]}):
            if isinstance(event, DamageFound) and event.aside:
                path = damage.aside_path(self.path, event.aside)
                if path is not None:
                    paths.add(path)
        return sorted(paths)

    def remove_aside(self, wanted: Callable[[Event], bool]) -> list[str]:
        """Remove the copies kept aside that may hold an event ``wanted`` picks: a deletion
        reaches every file that may hold its frames' text (``damage.may_hold``)."""
        removed = []
        with self.locked():
            for path in self.kept_aside():
                if damage.may_hold(path.read_bytes(), wanted):
                    self.fs.remove(path)
                    removed.append(str(path.relative_to(self.path)))
                    warn(__name__, "event log: %s removed by a deletion", path.name)
            for folder in {(self.path / name).parent for name in removed}:
                self.fs.fsync_dir(folder)  # the unlinks are durable: no copy comes back
        return removed

    def disk_bytes(self) -> int:
        while True:
            try:
                return sum(s.path.stat().st_size for s in self.segments())
            except FileNotFoundError:
                continue  # a roll or compaction swapped a segment away: count again


if TYPE_CHECKING:
    _conforms: EventLog = Log(Path())  # mypy holds the disk log to the contract here


def _utc_day(us: int) -> str:
    return datetime.fromtimestamp(us / 1_000_000, UTC).strftime("%Y-%m-%d")
