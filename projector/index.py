"""The search view as it lies on disk, shared by its writer and its readers: the manifest
that lists each month's live partition, and how a partition is opened.

Tantivy creates and locks ``.tantivy-meta.lock`` in an index's folder even to read it, which a
read-only store refuses and which would be a write under the home. A reader opens a partition
through a private folder of symbolic links to its files instead (``open_to_read``), made on
a RAM file system where there is one: 14 links took 3.6 ms to make and remove on this
machine's ext4 /tmp, 0.1 ms on tmpfs. The folder is removed once Tantivy has opened the
files it names, which it keeps (mapped) for the index's life; the index is opened again
after its next commit, never reloaded.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from base import jsontext
from base.fs import write_atomic
from projector.schema import SCHEMA_VERSION, build_schema, register_analyzers

if TYPE_CHECKING:
    import tantivy

MANIFEST = "manifest.json"


class Manifest(msgspec.Struct):
    """``position``: the last log offset whose effects are committed; ``applying_upto``: the
    last offset a commit in progress may already have added; ``partitions``: month → folder."""

    schema: int = SCHEMA_VERSION
    position: int = -1
    applying_upto: int = -1
    partitions: dict[str, str] = {}

    @classmethod
    def load(cls, root: Path) -> Manifest | None:
        try:
            return jsontext.decode((root / MANIFEST).read_bytes(), cls)
        except (FileNotFoundError, msgspec.DecodeError):
            return None  # missing or damaged: the view is rebuilt from the log

    def save(self, root: Path) -> None:
        self.partitions = dict(sorted(self.partitions.items()))
        write_atomic(root / MANIFEST, msgspec.json.encode(self))


def open_index(path: Path, schema: tantivy.Schema | None = None) -> tantivy.Index:
    import tantivy

    index = tantivy.Index(schema or build_schema(), path=str(path), reuse=True)
    register_analyzers(index)
    return index


LINK_ATTEMPTS = 3
"""A commit may remove files between the listing and Tantivy opening them: list again."""


def open_to_read(path: Path, attempts: int = LINK_ATTEMPTS) -> tantivy.Index:
    """The partition at ``path`` opened to search, creating, locking and writing nothing
    under it. Raises ValueError or OSError where it is not an index that opens."""
    try:
        return _open_through_links(path)
    except (OSError, ValueError):
        if attempts <= 1:
            raise
        return open_to_read(path, attempts - 1)


def _open_through_links(path: Path) -> tantivy.Index:
    import tantivy

    links = Path(tempfile.mkdtemp(prefix="backscroll-read-", dir=_scratch()))
    try:
        for entry in os.scandir(path):
            if not entry.name.startswith(".tantivy-"):  # its locks: Tantivy makes its own
                os.symlink(entry.path, links / entry.name)
        index = tantivy.Index.open(str(links))
    finally:
        _remove(links)
    register_analyzers(index)
    return index


def _remove(links: Path) -> None:
    """Remove the folder of links. Tantivy's meta-file watcher thread makes its lock file in
    it when it first looks, which may be while the folder is being removed: remove again
    until the folder is gone (once it is, the watcher can make nothing). Names, not
    ``shutil.rmtree``: the folder holds no folders, and rmtree's walk took 0.5 ms."""
    while True:
        for name in os.listdir(links):
            os.unlink(links / name)
        try:
            os.rmdir(links)
            return
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise


def _scratch() -> str | None:
    """A private RAM folder for the links when there is one; else the system's temporary
    folder (None)."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None
