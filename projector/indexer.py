"""The search view: one Tantivy index per month of capture time, listed by a manifest.

    views/search/manifest.json      {"schema", "position", "applying_upto", "partitions"}
    views/search/2026-11.g3/        the live generation of November 2026's partition

``position`` is the last log offset whose effects are committed. Before a commit the
manifest records ``applying_upto``: frames up to there may already be in an index, so on
resume they are deleted by id before being added again, which makes replay idempotent.

A partition is never edited to delete frames: Tantivy's deletes are soft (the terms and the
stored text stay in the files until a merge nobody can force from Python). A deletion
rebuilds the months it touches into a new generation from the already-compacted log, switches
the manifest, and removes the old generation's folder, so nothing of a deleted frame remains.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from base.fs import ensure_dir
from eventlog.events import FrameCaptured
from projector.index import MANIFEST, Manifest, broken, damage, open_index
from projector.schema import (
    SCHEMA_VERSION,
    build_schema,
    frame_document,
    frame_query,
    partition_of,
)

if TYPE_CHECKING:
    import tantivy

WRITER_HEAP = 128_000_000
WRITER_THREADS = 2
OPEN_WRITERS = 2
MONTH_DONE_AFTER = 1000


class SearchWriter:
    """Adds frames to the partitions; used only by the holder of the views lock."""

    def __init__(self, root: Path) -> None:
        self.root = ensure_dir(root)
        self.schema = build_schema()
        manifest = Manifest.load(root)
        if manifest is None or manifest.schema != SCHEMA_VERSION or not _opens(root, manifest):
            manifest = Manifest()  # rebuilt from zero by replaying the log
        self.manifest = manifest
        remove_strays(self.root, manifest)
        self.damaged = _damaged(root, manifest)
        """Months whose files changed since the last commit and fail their checksums: the
        projector rebuilds them from the log before anything else."""
        self._indexes: dict[str, tantivy.Index] = {}
        self._writers: dict[str, tantivy.IndexWriter] = {}
        self._dirty_upto = -1

    @property
    def position(self) -> int:
        return self.manifest.position

    def _writer(self, partition: str) -> tantivy.IndexWriter:
        writer = self._writers.pop(partition, None)
        if writer is None:
            if len(self._writers) >= OPEN_WRITERS:
                oldest = next(iter(self._writers))
                self._close_writer(oldest)
            name = self.manifest.partitions.get(partition)
            if name is None:
                name = f"{partition}.g1"
                self.manifest.partitions[partition] = name
            index = open_index(ensure_dir(self.root / name), self.schema)
            self._indexes[partition] = index
            writer = index.writer(WRITER_HEAP, WRITER_THREADS)
        self._writers[partition] = writer  # most recently used last
        return writer

    def _close_writer(self, partition: str) -> None:
        writer = self._writers.pop(partition)
        # Its commit makes frames past ``position`` durable, as ``commit`` does: record them
        # first, or a replay after a crash would add them a second time.
        if self._dirty_upto > self.manifest.applying_upto:
            self.manifest.applying_upto = self._dirty_upto
            self.manifest.save(self.root)
        writer.commit()
        writer.wait_merging_threads()

    def add(self, frame: FrameCaptured) -> None:
        writer = self._writer(partition_of(frame.captured_us))
        if frame.frame_id <= self.manifest.applying_upto:
            writer.delete_documents_by_query(frame_query(self.schema, frame.frame_id))
        writer.add_document(frame_document(frame, self.schema))
        self._dirty_upto = frame.frame_id

    def commit(self, position: int) -> None:
        """Make everything added durable, and record ``position`` with it."""
        if self._writers:
            self.manifest.applying_upto = max(self.manifest.applying_upto, self._dirty_upto)
            self.manifest.save(self.root)
            for writer in self._writers.values():
                writer.commit()
        self.manifest.position = position
        self.manifest.save(self.root)

    def close(self) -> None:
        for partition in list(self._writers):
            self._close_writer(partition)
        self._indexes.clear()

    def rebuild(self, frames: Iterable[FrameCaptured], months: set[str] | None = None) -> None:
        """Rebuild ``months`` (every month, when None) from ``frames`` into new generations,
        streaming, then switch the manifest to them at once.

        Frames of other months are skipped; a rebuilt month with no frames left disappears.
        Queries keep answering from the old generations until the switch.
        """
        for partition in list(self._writers):
            if months is None or partition in months:
                self._close_writer(partition)
        new: dict[str, str] = {}
        writers: dict[str, tantivy.IndexWriter] = {}
        last_frame: dict[str, int] = {}  # per open month, the count when it last had a frame
        # A month's commit runs on its own thread (Tantivy lets go of the GIL) while the
        # next month's frames are read and added: the commits were a quarter of a rebuild
        # when every month waited for the end. A month is done once ``MONTH_DONE_AFTER``
        # frames of others followed its last one (the log is in capture order, give or take
        # a clock step); one that comes back later is reopened, as one more segment.
        finishing: dict[str, Future[None]] = {}
        with ThreadPoolExecutor(OPEN_WRITERS, thread_name_prefix="commit") as pool:
            current = ""
            writer: tantivy.IndexWriter  # the current month's
            for count, frame in enumerate(frames):
                month = partition_of(frame.captured_us)
                if month != current:  # frames come in runs of one month: look up at a change
                    if months is not None and month not in months:
                        continue
                    found = writers.get(month)
                    if found is None:
                        if len(writers) >= OPEN_WRITERS:  # each holds WRITER_HEAP: keep a few
                            old = min(writers, key=last_frame.__getitem__)
                            finishing[old] = pool.submit(_finish, writers.pop(old))
                        if month in finishing:  # back again: its writer must be done first
                            finishing.pop(month).result()
                        if month not in new:
                            new[month] = self._next_generation(month)
                        found = writers[month] = open_index(
                            self.root / new[month], self.schema
                        ).writer(WRITER_HEAP, WRITER_THREADS)
                    current, writer = month, found
                last_frame[month] = count
                if not count % 256 and len(writers) > 1:
                    for old in [m for m in writers if count - last_frame[m] > MONTH_DONE_AFTER]:
                        finishing[old] = pool.submit(_finish, writers.pop(old))
                writer.add_document(frame_document(frame, self.schema))
            for month, writer in writers.items():
                finishing[month] = pool.submit(_finish, writer)
            for future in finishing.values():
                future.result()
        retired = [
            name
            for month, name in self.manifest.partitions.items()
            if months is None or month in months
        ]
        for month in months if months is not None else set(self.manifest.partitions):
            self.manifest.partitions.pop(month, None)
        self.manifest.partitions.update(new)
        self._indexes.clear()
        self.manifest.save(self.root)
        for name in retired:
            shutil.rmtree(self.root / name, ignore_errors=True)
        remove_strays(self.root, self.manifest)

    def _next_generation(self, month: str) -> str:
        old = self.manifest.partitions.get(month)
        name = f"{month}.g{int(old.rsplit('.g', 1)[1]) + 1 if old else 1}"
        shutil.rmtree(self.root / name, ignore_errors=True)
        ensure_dir(self.root / name)
        return name


def _finish(writer: tantivy.IndexWriter) -> None:
    writer.commit()
    writer.wait_merging_threads()


def _opens(root: Path, manifest: Manifest) -> bool:
    """Whether every partition the manifest lists is there and opens."""
    for name in manifest.partitions.values():
        if not (root / name / "meta.json").exists():
            return False  # opening would quietly create an empty index in its place
        try:
            open_index(root / name)
        except BaseException as exc:
            if not (isinstance(exc, OSError) or broken(exc)):
                raise
            return False
    return True


def _damaged(root: Path, manifest: Manifest) -> dict[str, str]:
    """Month → why, for the partitions with a file that fails its checksum, among the files
    modified since the manifest was last saved: every commit saves it after its files, so a
    file newer than it was changed by something else (a merge finishing, a hand, a tool).
    Reading only those keeps a writer's start-up from reading gigabytes; damage that leaves
    no mark on the file's time is found by a reader, which names ``reindex --views-only``."""
    try:
        since = (root / MANIFEST).stat().st_mtime_ns
    except FileNotFoundError:
        return {}
    found = {}
    for month, name in manifest.partitions.items():
        why = damage(root / name, newer_than_ns=since)
        if why is not None:
            found[month] = why
    return found


def remove_strays(root: Path, manifest: Manifest) -> None:
    """Generations the manifest does not list (a rebuild interrupted by a crash) go."""
    live = set(manifest.partitions.values())
    for entry in root.iterdir():
        if entry.is_dir() and entry.name not in live:
            shutil.rmtree(entry, ignore_errors=True)
