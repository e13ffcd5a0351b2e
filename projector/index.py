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
import json
import os
import struct
import zlib
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


REBUILD = "`backscroll reindex --views-only` rebuilds the views from the log"
"""What a reader that meets a damaged view tells the person (it writes nothing itself)."""

SEGMENT_FILES = ("store", "term", "idx", "pos", "fast", "fieldnorm")
FOOTER_MAGIC = 1337
"""Tantivy ends every file of an index with a JSON footer holding the CRC-32 of the bytes
before it, then the footer's length and this number, each a little-endian u32."""


def damage(path: Path, newer_than_ns: int = -1) -> str | None:
    """Why the partition at ``path`` is damaged (its meta.json does not decode, or a file of
    a segment it lists fails its checksum), or None. Only the files modified at or after
    ``newer_than_ns`` are read: a writer checks what changed since its last commit,
    ``verify`` everything. Files no segment lists are a commit that never happened (a
    writer killed mid-way), which Tantivy removes: they are not the index's.

    Opening an index reads its meta.json and footers only: a damaged stored-text block
    opened fine and broke every read that reached it."""
    try:
        meta = json.loads((path / "meta.json").read_bytes())
        names: set[str] = set()
        for segment in meta["segments"]:
            stem = segment["segment_id"].replace("-", "")
            names.update(f"{stem}.{ext}" for ext in SEGMENT_FILES)
            if segment.get("deletes"):
                names.add(f"{stem}.{segment['deletes']['opstamp']}.del")
    except (ValueError, KeyError, TypeError, AttributeError):
        return "meta.json does not decode"
    for name in sorted(names):
        try:
            if (path / name).stat().st_mtime_ns < newer_than_ns:
                continue
            data = (path / name).read_bytes()
        except FileNotFoundError:
            return f"{name} is missing"  # Tantivy writes every file of a segment, always
        if not _sound(data):
            return f"{name} fails its checksum"
    return None


def _sound(data: bytes) -> bool:
    if len(data) < 8:
        return False
    length, magic = struct.unpack("<II", data[-8:])
    if magic != FOOTER_MAGIC or length > len(data) - 8:
        return False
    try:
        crc = json.loads(data[-8 - length : -8])["crc"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(crc == zlib.crc32(memoryview(data)[: -8 - length]))


def broken(exc: BaseException) -> bool:
    """Whether ``exc`` is a read of an index failing on its bytes: Tantivy's ValueError, or a
    panic of its Rust code (damaged postings or fast fields panicked in a search), which pyo3
    raises as a ``PanicException`` deriving from BaseException, past ``except Exception``.
    Its module exists only once a panic was raised: matched by name."""
    return isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"


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

    # Strings and a descriptor of the folder, not a Path a link: a search opens every month,
    # ~20 files each, and Path's joins were a quarter of the time the links took.
    links = _private_folder()
    folder = os.open(links, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for entry in os.scandir(path):
            if not entry.name.startswith(".tantivy-"):  # its locks: Tantivy makes its own
                os.symlink(entry.path, entry.name, dir_fd=folder)
        index = tantivy.Index.open(links)
    finally:
        _remove(links, folder)
    register_analyzers(index)
    return index


def _remove(links: str, folder: int) -> None:
    """Remove the folder of links (``folder``: its descriptor, closed here). Tantivy's
    meta-file watcher thread makes its lock file in it when it first looks, which may be
    while the folder is being removed: remove again until the folder is gone (once it is,
    the watcher can make nothing). Names, not ``shutil.rmtree``: the folder holds no
    folders, and rmtree's walk took 0.5 ms."""
    try:
        while True:
            for name in os.listdir(folder):
                os.unlink(name, dir_fd=folder)
            try:
                os.rmdir(links)
                return
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
    finally:
        os.close(folder)


def _private_folder() -> str:
    """A new folder that only this user can enter, named at random, as ``tempfile.mkdtemp``
    makes one: without importing ``tempfile`` (with ``shutil`` and ``random``, 0.13x Python's
    own start on every search) where a RAM folder serves."""
    parent = _scratch()
    if parent is None:
        import tempfile

        parent = tempfile.gettempdir()
    while True:
        path = os.path.join(parent, f"backscroll-read-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def _scratch() -> str | None:
    """A private RAM folder for the links when there is one; else the system's temporary
    folder (None)."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None
