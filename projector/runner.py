"""The projector: applies the log to the views, and executes deletions and rebuilds.

Whoever holds the views lock (the daemon when it runs, otherwise the CLI command itself) is
the only writer of the views and the only executor of purges.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from base import jsontext
from base.clock import now_us
from base.errors import BackscrollError, DiskFullError, LockedError, is_disk_full
from base.fs import current, ensure_dir, names, write_atomic
from base.home import Layout
from eventlog.codec import decode_or_report, type_code
from eventlog.contract import EventLog
from eventlog.events import (
    FRAME_TYPE,
    MEMORY_TYPES,
    DamageFound,
    Event,
    FrameCaptured,
    PurgeCompleted,
)
from eventlog.log import Log
from eventlog.segment import Problem, Record
from projector.indexer import SearchWriter
from projector.kept import KeptView
from projector.meaning import FRAMES_PER_BATCH, Keying, MeaningWriter, TextOf
from projector.schema import partition_of
from projector.state import Deletion, FrameStats, State, matches
from projector.vectors import ViewCipher

if TYPE_CHECKING:
    from projector.embedder import Embedder

log = logging.getLogger(__name__)

BATCH_EVENTS = 1000
"""Progress is reported every so many events."""
BATCH_SECONDS = 1.5
"""A long catch-up commits this often, so readers see it advance. Not every ``BATCH_EVENTS``
too: each commit waits for Tantivy's threads to index all they were given, and writes and
syncs a small segment that must later be merged; committing every 1,000 frames cost an import
of 20,000 frames of real text 65 µs a frame of its ~250."""
IDLE_SECONDS = 5.0
PURGE_PLAN = "purge.json"


class PurgePlan(msgspec.Struct):
    """What a deletion must remove, saved before the first step so that a crash at any step
    is finished by the next executor even though the compacted log no longer shows it."""

    request: int
    months: set[str] = set()
    thumbs: list[str] = []


Progress = Callable[[int, int], None]
"""Called with (events done, events to do)."""


def plain_text(frame: FrameCaptured) -> str | None:
    """A frame's text where it is kept in plain; None for an encrypted frame."""
    return None if frame.encrypted else frame.text


def _no_key() -> tuple[ViewCipher | None, bool]:
    return None, False


class Projector:
    def __init__(
        self,
        home: Path,
        log_: EventLog | None = None,
        text_of: TextOf = plain_text,
        keying: Keying | None = None,
    ) -> None:
        """``text_of`` and ``keying``: what the meaning view needs of the key (the text of
        encrypted frames; its own files sealed when the store encrypts text)."""
        self.layout = Layout(home)
        ensure_dir(self.layout.views)
        self.log: EventLog = log_ or Log(self.layout.log)
        self._lock_fd = _try_lock(self.layout.views / "LOCK")
        self.lock = threading.Lock()
        """Held while the meaning view is written: its batches (the daemon's low-priority
        thread) and the purges and rebuilds (the projector's) take turns."""
        try:
            self.search = SearchWriter(self.layout.search)
            self.meaning = MeaningWriter(
                self.layout.views / "meaning", self.log, text_of, keying or _no_key
            )
            state = State.load(self.layout.views)
        except BaseException:
            # Opening the writer may repair a damaged month, and so fail (a full disk, a power
            # cut): the lock goes with it, or this process would lock itself out of its views.
            os.close(self._lock_fd)
            raise
        if state is None or self.search.position < 0 <= state.position:
            state = State()
        self.state = state
        self.kept = self._kept_view()
        self._kept_changed = False
        self._applied = -1
        """The last offset applied, committed or not."""
        self._last_commit = time.monotonic()
        self._rebuild = False
        self._retry = False
        """A control event was applied (a person's command ran): what stopped a purge may be
        fixed, so a deletion whose purge failed is tried again. Not at every catch-up: the
        daemon's would read the whole log for the purge's plan every few seconds."""

    def _kept_view(self) -> KeptView:
        """The kept memories' view as saved, or built from the log's memory events up to the
        state's position where it is missing or damaged (a store older than kept memories)."""
        kept = KeptView.load(self.layout.views)
        if kept is None:
            kept = KeptView()
            for offset, event in self.log.read(types=MEMORY_TYPES):
                if offset > self.state.position:
                    break
                kept.apply(offset, event)
            kept.position = self.state.position
            kept.save(self.layout.views)
        return kept

    def close(self) -> None:
        try:
            self.search.close()
        finally:
            os.close(self._lock_fd)  # even when the last commit failed (a full disk)

    def __enter__(self) -> Projector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def position(self) -> int:
        return min(self.search.position, self.state.position)

    def lag(self) -> int:
        return max(0, self.log.next_offset() - 1 - self.position)

    def embed(self, embedder: Embedder, frames: int = FRAMES_PER_BATCH) -> tuple[int, int]:
        """One batch of the meaning view (``MeaningWriter.step``) up to the words view."""
        with self.lock:
            return self.meaning.step(embedder, self.search.position, frames)

    def embed_all(self, embedder: Embedder, progress: Progress | None = None) -> int:
        """The meaning view caught up with the words view, batch by batch (Ctrl-C keeps the
        batches done), and its months' maps tended. Returns the frames embedded."""
        total = self.state.totals().frames - self.meaning.manifest.frames
        done = 0
        while True:
            embedded, read = self.embed(embedder)
            if not read:
                break
            done += embedded
            if progress:
                progress(done, max(total, done))
        while True:  # every month's chunks into its map, one month a commit
            with self.lock:
                if not self.meaning.tend():
                    return done

    # -- catching up -----------------------------------------------------------------------

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply every new event, committing every ``BATCH_SECONDS`` and at the end; then
        purge.

        When the log's last segment has not changed since the last catch-up began, nothing
        was appended: return at once, without reading (a command's start-up would otherwise
        re-scan up to 64 MB of active segment to learn that).
        """
        self._repair()
        mark = self.log.mark()
        if mark == self.state.log_mark and not self._to_purge():
            return 0
        total = max(0, self.log.next_offset() - self._next()) if progress else 0
        done = self._apply_new(progress, total)
        if self._applied > self.position:
            self._commit(self._applied)
        if progress:
            progress(done, max(total, done))
        if self._rebuild:
            self._rebuild = False
            self.rebuild_all()
        self.purge_pending()
        self.state.log_mark = self.log.mark() if self._to_purge() else mark
        self.state.save(self.layout.views)
        return done

    def apply_new(self) -> None:
        """Apply the events appended since the last call, committing only every
        ``BATCH_SECONDS``: a writer of many batches (``import``) calls it after each, so
        Tantivy's threads index one batch while the next is read and appended on the other
        core; its last ``catch_up`` commits the rest. A deletion among the events is carried
        out at once, as ``catch_up`` does: a ``clear`` run meanwhile waits on this writer."""
        self._repair()
        self._apply_new()
        if self._to_purge():
            self.catch_up()

    def _repair(self) -> None:
        """Rebuild the damaged months from the log before anything is added to them."""
        if self.search.damaged:
            for month, why in sorted(self.search.damaged.items()):
                log.warning(
                    "the search view of %s is damaged (%s): rebuilt from the log", month, why
                )
            self.rebuild_months(set(self.search.damaged))
            self.search.damaged = {}

    def _next(self) -> int:
        return max(self.position, self._applied) + 1

    def _apply_new(self, progress: Progress | None = None, total: int = 0) -> int:
        done = 0
        for record in self.log.records(self._next()):
            self._apply_record(record)
            self._applied = record.offset
            done += 1
            if time.monotonic() - self._last_commit > BATCH_SECONDS:
                self._commit(record.offset)
            if progress and not done % BATCH_EVENTS:
                progress(done, total)
        return done

    def follow(
        self,
        stop: threading.Event,
        on_idle: Callable[[], None] | None = None,
        also: Sequence[Path] = (),
    ) -> None:
        """Keep the views current until ``stop`` is set: new frames searchable within 2 s.

        Wakes on a change to the log or to ``also`` (the daemon's config.json), and every
        ``IDLE_SECONDS`` otherwise: waking every second was 0.8% of a core on an idle day.
        """
        reader = self.log.reader()
        while not stop.is_set():
            self.keep_lock()
            self.catch_up()
            if on_idle:
                on_idle()
            reader.wait(IDLE_SECONDS, stop, also)

    def keep_lock(self) -> None:
        """Take the views' lock again when ``views/LOCK`` was removed or replaced while this
        writer holds it; ``LockedError`` when another process locked the new file first."""
        path = self.layout.views / "LOCK"
        if names(path, self._lock_fd):
            return
        fd = _try_lock(path)
        os.close(self._lock_fd)
        self._lock_fd = fd
        log.info("views/LOCK was removed or replaced while held: taken again")

    def _apply_record(self, record: Record) -> None:
        """Apply one record; one that does not decode or apply is noted and skipped: the log
        is never hostage to one event."""
        problems: list[Problem] = []
        event = decode_or_report(record, problems)
        if event is None:
            self.state.skip(record.offset, problems[0].message)
            return
        if isinstance(event, DamageFound):
            # Frames the views hold may be gone from the log: rebuild from what it holds.
            self._rebuild = True
        if not isinstance(event, FrameCaptured):
            self._retry = True
        try:
            self._apply(record.offset, event)
        except (ValueError, TypeError, OverflowError) as exc:
            if is_disk_full(exc):
                raise
            tag = event.__struct_config__.tag
            self.state.skip(record.offset, f"{tag} event cannot be applied: {exc}")

    def _apply(self, offset: int, event: Event) -> None:
        if offset > self.search.position and isinstance(event, FrameCaptured):
            self.search.add(event)
        if offset > self.state.position:
            self.state.apply(offset, event)
        if offset > self.kept.position and type_code(event) in MEMORY_TYPES:
            self.kept.apply(offset, event)
            self._kept_changed = True

    def _commit(self, position: int) -> None:
        # The state first: a reader never finds a frame whose app the state does not list
        # yet (an app filter without words takes its app names from the state).
        self.state.position = max(position, self.state.position)
        if self._kept_changed:
            # Before the state: a reader applies the memory events past the later of the
            # two positions, so none at or below the state's may be missing here.
            self.kept.position = max(position, self.kept.position)
            self.kept.save(self.layout.views)
            self._kept_changed = False
        self.state.save(self.layout.views)
        self.search.commit(max(position, self.search.position))
        self._last_commit = time.monotonic()

    # -- deletion --------------------------------------------------------------------------

    def _to_purge(self) -> list[Deletion]:
        return [d for d in self.state.pending_deletions() if self._retry or not d.problem]

    def purge_pending(self) -> None:
        """Purge every pending deletion. One whose purge cannot complete (a segment this
        version cannot read, a file it may not open) stays pending with its frames hidden
        (the tombstone hides them from every read), and its problem is recorded for
        ``status``, ``verify`` and the command that asked: it must not stop every later
        writer, as it did (every command that writes failed on it). A full disk is not
        such a problem: it stops the writer, which says so."""
        deletions, self._retry = self._to_purge(), False
        for deletion in deletions:
            try:
                self.purge(deletion)
            except (BackscrollError, OSError) as exc:
                if isinstance(exc, DiskFullError) or is_disk_full(exc):
                    raise
                deletion.problem = failure_line(exc)
                log.warning(
                    "deletion #%d: its purge cannot complete: %s", deletion.offset, deletion.problem
                )
                self.state.save(self.layout.views)

    def purge(self, deletion: Deletion) -> None:
        """Compact the frames away, rebuild the months they were in, remove thumbnails.

        The plan (which months) is saved first, so a crash at any step is finished by the
        next executor even though the compacted log no longer shows what was removed.
        """
        plan_path = self.layout.views / PURGE_PLAN
        plan = _load_plan(plan_path)
        damaged = plan is None and plan_path.exists()
        if plan is None or plan.request != deletion.offset:
            plan = PurgePlan(deletion.offset)
            for _, event in self.log.read(types={FRAME_TYPE}):
                assert isinstance(event, FrameCaptured)
                if matches(deletion.scope, event):
                    plan.months.add(partition_of(event.captured_us))
                    if event.thumb:
                        plan.thumbs.append(event.thumb)
            if damaged:
                # A damaged plan may be all that knew which months held the frames, if the
                # log was compacted before the damage: rebuild every month to be sure.
                plan.months.update(self.state.partitions)
            write_atomic(plan_path, msgspec.json.encode(plan))
        removed_thumbs = self._remove_thumbnails(plan.thumbs)

        def wanted(event: Event) -> bool:
            return isinstance(event, FrameCaptured) and matches(deletion.scope, event)

        compacted = self.log.compact(lambda _, e: None if wanted(e) else e)
        aside = self.log.remove_aside(wanted)  # torn tails and damage may hold their text
        self.rebuild_months(plan.months)
        frames = len(compacted.dropped) or len(plan.thumbs)
        self.log.append(
            PurgeCompleted(
                ts_us=now_us(),
                request_id=deletion.offset,
                frames=frames,
                thumbnails=removed_thumbs,
                aside=tuple(aside),
            )
        )
        current().remove(plan_path)
        self.catch_up()

    def expire(self, cutoff_us: int) -> int:
        """Retention: compact old frames away and rebuild the months they were in."""
        compacted = self.log.retain(cutoff_us)
        frames = [e for _, e in compacted.dropped if isinstance(e, FrameCaptured)]
        self._remove_thumbnails([f.thumb for f in frames if f.thumb])
        self.rebuild_months({partition_of(f.captured_us) for f in frames})
        return len(frames)

    def rebuild_months(self, months: set[str]) -> None:
        if not months:
            return
        self._commit(max(self.position, self._applied))
        stats = {m: FrameStats() for m in months}
        keep: set[int] = set()

        def frames() -> Iterator[FrameCaptured]:
            for offset, event in self.log.read(types={FRAME_TYPE}):
                if offset > self.position:
                    return
                assert isinstance(event, FrameCaptured)
                month = partition_of(event.captured_us)
                if month in stats:
                    stats[month].add(event)
                    keep.add(event.frame_id)
                    yield event

        self.search.rebuild(frames(), months)
        with self.lock:
            self.meaning.rebuild_months(months, keep)
        for month in months:
            if stats[month].frames:
                self.state.partitions[month] = stats[month]
            else:
                self.state.partitions.pop(month, None)
        self.state.save(self.layout.views)

    def _remove_thumbnails(self, paths: list[str]) -> int:
        fs = current()
        removed = 0
        folders = set()
        for rel in paths:
            path = self.layout.home / rel
            if path.exists():
                fs.remove(path)
                removed += 1
                folders.add(path.parent)
        for folder in folders:
            if not any(folder.iterdir()):
                shutil.rmtree(folder, ignore_errors=True)
            # An unlink is durable once its folder is fsynced (its parent's, if the folder
            # went): else a power cut after the purge could bring a deleted thumbnail back.
            fs.fsync_dir(folder if folder.exists() else folder.parent)
        return removed

    # -- full rebuild ----------------------------------------------------------------------

    def rebuild_all(self, progress: Progress | None = None) -> None:
        """Replay the whole log into new generations of every view, then switch. Streamed:
        Tantivy indexes while the log is still being read, and no frame is held longer."""
        state = State()
        kept = KeptView()
        total = self.log.next_offset() if progress else 0
        done = 0

        problems: list[Problem] = []

        def frames() -> Iterator[FrameCaptured]:
            nonlocal done
            for offset, event in self.log.read(problems=problems):
                state.apply(offset, event)
                kept.apply(offset, event)
                done += 1
                if progress and done % BATCH_EVENTS == 0:
                    progress(done, total)
                if isinstance(event, FrameCaptured):
                    yield event

        self.search.rebuild(frames())
        with self.lock:
            self.meaning.clear()  # embedded again from the log: reindex, or the daemon
        for problem in problems:
            if problem.offset is not None and not problem.segment:
                state.skip(problem.offset, problem.message)
        self.search.manifest.position = self.search.manifest.applying_upto = state.position
        self.search.manifest.save(self.layout.search)
        kept.position = state.position
        kept.save(self.layout.views)
        self.kept = kept
        self.state = state
        self.state.save(self.layout.views)
        if progress:
            progress(done, max(done, total))
        self.purge_pending()


def failure_line(exc: BaseException) -> str:
    """One line naming what stopped a purge or a reindex."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _try_lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LockedError("the views are being updated by another Backscroll process") from None
    return fd


def _load_plan(path: Path) -> PurgePlan | None:
    """The saved plan; None when there is none or it cannot be read (then it is re-made)."""
    try:
        return jsontext.decode(path.read_bytes(), PurgePlan)
    except (FileNotFoundError, msgspec.DecodeError):
        return None
