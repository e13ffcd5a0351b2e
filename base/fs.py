"""The file layer: every durable write of a store goes through it, and so through one
``FileSystem``, which ``tests/faultfs.py`` swaps for one that simulates power cuts.

Reads go straight to the files. The log drives a ``FileSystem`` itself; everything else
writes whole files with one of three helpers, each with the log's guarantees: every byte
written (a short write is continued), the file fsynced, then its folder; a full disk
(ENOSPC, EDQUOT) raised as ``DiskFullError``; a write that fails leaves nothing behind.

    write_atomic(path, data)   replace: a crash leaves the old file or the new one, never
                               half (the views' manifest and state, the purge plan, the
                               config, keyinfo.json, the service files); the one for a path
                               a person names (``show --save``): a new 0600 file renamed
                               over it, so a symbolic link there is replaced, not followed
    write_new(path, data)      never replace: False when ``path`` exists; a crash leaves no
                               file or the whole one (the key file)
    write_file(path, data)     in place, for a file that nothing refers to until it is
                               written (a thumbnail, fsynced before the event naming it)

The first two write a temporary ``.<name>.<pid>-<16 hex>.tmp`` beside ``path``, created
with O_EXCL: two processes writing the same file at once never share one, and
``sweep_temporaries`` can tell the leftovers of a writer that died (a kill, a power cut:
they may hold a copy of the key) from those of a writer still at work.

``FS`` is the instance all of them use, read at each call, and the one a ``Log`` takes
unless it is given another: ``REAL_FS``, until a test swaps in its own
(``tests.faultfs.installed``) to put every durable write of a store under its power-cut
model, with no parameter threaded through the calls.

Files are created 0600 and folders 0700 by naming the mode at each creation: the umask
can only narrow it, so the layer never touches the process-wide umask. ``private_umask``
is for what Backscroll does not create itself (Tantivy's files) and is set once, where a
store opens.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from base.errors import DiskFullError, is_disk_full
from base.processes import pid_alive

FILE_MODE = 0o600
DIR_MODE = 0o700


class WritableFile:
    def __init__(self, path: Path, flags: int, mode: int = FILE_MODE) -> None:
        self.path = path
        self._fd = os.open(path, flags, mode)
        if mode & 0o077:
            # The umask can narrow the mode but never widen it: a file others must read
            # (the service unit) gets its bits explicitly.
            os.fchmod(self._fd, mode)

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
    def create(self, path: Path, *, exclusive: bool = False, mode: int = FILE_MODE) -> WritableFile:
        """A new, empty file: an existing one is truncated, or, ``exclusive``, refused; a
        symbolic link at ``path`` is refused (ELOOP), never followed to truncate its target."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_EXCL if exclusive else os.O_TRUNC)
        return WritableFile(path, flags, mode)

    def append(self, path: Path) -> WritableFile:
        return WritableFile(path, os.O_WRONLY | os.O_APPEND)

    def rename(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def link(self, src: Path, dst: Path) -> None:
        """A second name for ``src``; FileExistsError if ``dst`` exists."""
        os.link(src, dst)

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def mkdir(self, path: Path) -> None:
        os.mkdir(path, DIR_MODE)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


REAL_FS = FileSystem()
FS = REAL_FS


def current() -> FileSystem:
    """The file layer in use now (a test's fault-injecting one while it is installed)."""
    return FS


def private_umask() -> None:
    """Everything Backscroll (and Tantivy, in-process) creates is 0600 files, 0700 folders."""
    os.umask(0o077)


def ensure_dir(path: Path) -> Path:
    """``path`` as a folder, with any missing parents, each 0700 and made durable in its own
    parent: a file fsynced into a folder whose entry was lost would be lost with it."""
    missing: list[Path] = []
    folder = path
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            FS.mkdir(folder)
        except FileExistsError:
            if not folder.is_dir():
                raise
            # Made meanwhile by another process, which may not have synced its parent yet.
        FS.fsync_dir(folder.parent)
    return path


def fsync_dir(path: Path) -> None:
    FS.fsync_dir(path)


def open_log(path: Path) -> int:
    """A file a person names for Backscroll to append to (the daemon's ``--log-file``, which
    holds window titles): created 0600 and an existing one narrowed to 0600, as the log
    grows it; a symbolic link is refused (ELOOP), not followed to append to its target."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``. A lock held for a process's
    life is on the file, not the name: once the name is removed or replaced, another process
    locks a new file there and believes itself alone."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


def write_atomic(path: Path, data: bytes, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data``: a crash leaves the old file or the new one, never half."""
    with _disk_full_is_reported(path):
        tmp = _write_temporary(path, data, mode)
        try:
            FS.rename(tmp, path)
        except BaseException:
            _discard(tmp)
            raise
        FS.fsync_dir(path.parent)


def write_new(path: Path, data: bytes, *, mode: int = FILE_MODE) -> bool:
    """Create ``path`` holding ``data`` unless it exists (then False, and it is left alone).

    A crash leaves no file or the whole one, and an existing file is never overwritten,
    even by a writer racing this one: link() refuses an existing name where rename() would
    replace it.
    """
    with _disk_full_is_reported(path):
        tmp = _write_temporary(path, data, mode)
        try:
            FS.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            _discard(tmp)
        FS.fsync_dir(path.parent)
        return True


def write_file(path: Path, data: bytes, *, mode: int = FILE_MODE) -> None:
    """Write ``path`` in place (an existing file is truncated first), durably.

    Only for a file nothing refers to until this returns: a crash part way leaves a short
    file that must be recognisable as unreferenced (a thumbnail before its event). Not for a
    path a person names: an existing file there keeps its mode (write_atomic replaces it).
    """
    with _disk_full_is_reported(path):
        _write_whole(path, data, exclusive=False, mode=mode)
        FS.fsync_dir(path.parent)


def _write_temporary(path: Path, data: bytes, mode: int) -> Path:
    # os.urandom is what secrets.token_hex reads; importing secrets (with hmac, hashlib and
    # OpenSSL's library) cost every command ~0.2x python's own start.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(8).hex()}.tmp")
    _write_whole(tmp, data, exclusive=True, mode=mode)
    return tmp


def _write_whole(path: Path, data: bytes, *, exclusive: bool, mode: int) -> None:
    """Create ``path`` holding every byte of ``data``, fsynced; on failure, remove it."""
    f = FS.create(path, exclusive=exclusive, mode=mode)
    try:
        try:
            f.write(data)
            f.fsync()
        finally:
            f.close()
    except BaseException:
        _discard(path)
        raise


def sweep_temporaries(folder: Path) -> int:
    """Remove the temporaries that writers which died mid-write left in ``folder``; a live
    writer's (its pid in the name) is left alone. Returns how many went."""
    removed = 0
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    for name in names:
        pid = _writer_of(name)
        if pid is not None and not pid_alive(pid):
            _discard(folder / name)
            removed += 1
    return removed


def _writer_of(name: str) -> int | None:
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    tag = name.removesuffix(".tmp").rsplit(".", 1)[-1]
    pid, _, token = tag.partition("-")
    return int(pid) if pid.isdigit() and len(token) == 16 else None


def _discard(path: Path) -> None:
    # Cleaning up after a failure must not replace the failure being reported: the removal
    # may fail too (the disk went away, the simulated machine is off).
    with contextlib.suppress(Exception):
        FS.remove(path)


@contextlib.contextmanager
def _disk_full_is_reported(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(path.parent, f"write {path.name}") from None
        raise
