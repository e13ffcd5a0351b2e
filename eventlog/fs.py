"""The few file operations the log writes through, so tests can inject power cuts.

Reads go straight to the files. Every write-side operation goes through a ``FileSystem``,
which ``tests/faultfs.py`` replaces with one that, at a simulated power cut, drops every
write and every directory change not yet made durable by an fsync.
"""

from __future__ import annotations

import os
from pathlib import Path


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
