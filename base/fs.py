"""The file layer: the few write operations the store goes through, so tests can inject
power cuts, and the file-mode rules for everything under a home.

Reads go straight to the files. Every write-side operation goes through a ``FileSystem``,
which ``tests/faultfs.py`` replaces with one that, at a simulated power cut, drops every
write and every directory change not yet made durable by an fsync.
"""

from __future__ import annotations

import os
from pathlib import Path

from base.errors import DiskFullError, is_disk_full


class WritableFile:
    def __init__(self, path: Path, flags: int) -> None:
        self.path = path
        self._fd = os.open(path, flags, 0o600)

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def fsync(self) -> None:
        os.fsync(self._fd)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        os.close(self._fd)


class FileSystem:
    def create(self, path: Path) -> WritableFile:
        """A new, empty file (an existing one is truncated)."""
        return WritableFile(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)

    def append(self, path: Path) -> WritableFile:
        return WritableFile(path, os.O_WRONLY | os.O_APPEND)

    def rename(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


REAL_FS = FileSystem()


def private_umask() -> None:
    """Everything Backscroll (and Tantivy, in-process) creates is 0600 files, 0700 folders."""
    os.umask(0o077)


def ensure_dir(path: Path) -> Path:
    private_umask()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a crash leaves the old file or the new one, never half."""
    private_umask()
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFullError(path.parent, f"write {path.name}") from None
        raise
    fsync_dir(path.parent)
