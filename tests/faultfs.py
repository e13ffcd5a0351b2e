"""A file layer that simulates power cuts, after LevelDB's ``FaultInjectionTestEnv``.

``FaultFS`` performs every write for real (but fsyncs only in its model: the real disk's
durability is beside the point), and remembers what an fsync has made durable:

- per file, the bytes as of its last ``fsync`` (a file never fsynced is empty);
- per folder, the names as of its last ``fsync_dir`` (a create, rename, link, remove or
  mkdir not yet followed by ``fsync_dir`` of its folder is not durable).

``power_cut()`` rewrites the real folder to that durable state: unsynced appends are cut off,
unsynced truncations undone, files whose creation was not made durable deleted, unsynced
renames and removes undone, folders whose creation was not made durable removed with all
they hold. Files are tracked by identity, not by name, so a file renamed after its last fsync
comes back under its old name with its fsynced bytes.

With ``rng``, the cut is less kind, as a real disk may be: a random prefix of the folder's
unsynced operations survives (journalled filesystems keep them in order), and a random prefix
of each file's unsynced appended bytes survives (a torn write).

``crash_at=N`` makes the Nth write-side call (create, append, rename, link, remove, mkdir,
fsync_dir, write, fsync, truncate) raise ``PowerCut`` without doing anything, and every later
call too: the machine is off.

What is changed without this layer is left as it is: lock files (``LOCK``, ``*.lock``), files
removed directly (a purge's thumbnails), Tantivy's own files in the folders of its indexes.

A ``Log`` given this layer uses it; ``installed(fs)`` makes it ``base.fs.FS``, the layer of
every other durable write (and of every ``Log`` opened meanwhile without one of its own).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import base.fs
from base.fs import FILE_MODE, FileSystem, WritableFile


class PowerCut(Exception):
    """The simulated machine lost power: nothing more reaches the disk."""


@dataclass
class _Folder:
    names: dict[str, int]
    """What the folder holds now: name -> file identity."""
    durable: dict[str, int]
    """What it held at its last fsync_dir."""
    pending: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    """Unsynced operations in order: ("create" | "rename" | "link" | "remove" | "mkdir",
    name, source, file or folder)."""


Layer = TypeVar("Layer", bound=FileSystem)


@contextlib.contextmanager
def installed(fs: Layer) -> Iterator[Layer]:
    """Every durable write through ``fs`` (the thumbnails, views, config, key) until exit."""
    previous, base.fs.FS = base.fs.FS, fs
    try:
        yield fs
    finally:
        base.fs.FS = previous


class FaultFile(WritableFile):
    def __init__(
        self, fs: FaultFS, path: Path, flags: int, file_id: int, mode: int = FILE_MODE
    ) -> None:
        super().__init__(path, flags, mode)
        self.fs = fs
        self.file_id = file_id

    def write(self, data: bytes | memoryview) -> None:
        self.fs._step("write", self.path)
        super().write(data)
        self.fs.content[self.file_id].extend(data)

    def fsync(self) -> None:
        # The model, not the disk, decides what survives: no real fsync, so sweeps run fast.
        self.fs._step("fsync", self.path)
        self.fs.synced[self.file_id] = bytes(self.fs.content[self.file_id])

    def truncate(self, size: int) -> None:
        self.fs._step("truncate", self.path)
        super().truncate(size)
        content = self.fs.content[self.file_id]
        del content[size:]
        content.extend(b"\0" * (size - len(content)))

    def close(self) -> None:
        # Closing changes nothing durable, and must work after the cut so no fd leaks.
        super().close()


class FaultFS(FileSystem):
    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        self.calls = 0
        self.trace: list[str] = []
        """``"op name"`` of every call made, for failure messages."""
        self.dead = False
        self.folders: dict[Path, _Folder] = {}
        self.content: dict[int, bytearray] = {}
        self.synced: dict[int, bytes] = {}
        self.dirs: set[int] = set()
        """The identities that are folders, not files."""
        self._ids = itertools.count()

    # -- the FileSystem interface ----------------------------------------------------------

    def create(self, path: Path, *, exclusive: bool = False, mode: int = FILE_MODE) -> WritableFile:
        self._step("create", path)
        folder = self._folder(path.parent)
        file_id = next(self._ids)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        f = FaultFile(self, path, flags, file_id, mode)
        self.content[file_id] = bytearray()
        folder.names[path.name] = file_id
        folder.pending.append(("create", path.name, None, file_id))
        return f

    def append(self, path: Path) -> WritableFile:
        self._step("append", path)
        file_id = self._folder(path.parent).names[path.name]
        return FaultFile(self, path, os.O_WRONLY | os.O_APPEND, file_id)

    def rename(self, src: Path, dst: Path) -> None:
        self._step("rename", dst)
        assert src.parent == dst.parent, "the store renames within one folder"
        folder = self._folder(src.parent)
        os.replace(src, dst)
        file_id = folder.names.pop(src.name)
        folder.names[dst.name] = file_id
        folder.pending.append(("rename", dst.name, src.name, file_id))

    def link(self, src: Path, dst: Path) -> None:
        self._step("link", dst)
        assert src.parent == dst.parent, "the store links within one folder"
        folder = self._folder(src.parent)
        os.link(src, dst)
        file_id = folder.names[dst.name] = folder.names[src.name]
        folder.pending.append(("link", dst.name, src.name, file_id))

    def remove(self, path: Path) -> None:
        self._step("remove", path)
        folder = self._folder(path.parent)
        path.unlink(missing_ok=True)
        file_id = folder.names.pop(path.name, None)
        if file_id is not None:
            folder.pending.append(("remove", path.name, None, file_id))

    def mkdir(self, path: Path) -> None:
        self._step("mkdir", path)
        parent = self._folder(path.parent)
        super().mkdir(path)
        dir_id = next(self._ids)
        self.dirs.add(dir_id)
        parent.names[path.name] = dir_id
        parent.pending.append(("mkdir", path.name, None, dir_id))
        self.folders[path] = _Folder({}, {})

    def fsync_dir(self, path: Path) -> None:
        self._step("fsync_dir", path)
        folder = self._folder(path)
        folder.durable = dict(folder.names)
        folder.pending.clear()

    def sync(self) -> None:
        self._step("sync", Path("/"))
        for file_id, data in self.content.items():
            self.synced[file_id] = bytes(data)
        for folder in self.folders.values():
            folder.durable = dict(folder.names)
            folder.pending.clear()

    # -- the power cut ---------------------------------------------------------------------

    def power_cut(self, rng: random.Random | None = None) -> None:
        """Rewrite every tracked folder to what a machine losing power now would find."""
        self.dead = True
        lost: list[Path] = []
        # Parents first: a folder whose creation is undone takes its tracked children along.
        for path in sorted(self.folders, key=lambda p: len(p.parts)):
            if not path.is_dir() or any(path.is_relative_to(gone) for gone in lost):
                continue  # removed without this layer, or inside a folder that was lost
            folder = self.folders[path]
            names = self._surviving(folder, rng)
            for name in set(folder.names) | set(folder.durable) | set(names):
                target = path / name
                if names.get(name, folder.names.get(name)) in self.dirs:
                    if target.is_dir() and names.get(name) not in self.dirs:
                        shutil.rmtree(target)
                        lost.append(target)
                elif name in folder.names and not target.exists():
                    continue  # removed without this layer
                else:
                    target.unlink(missing_ok=True)
                    if name in names:
                        self._restore(target, names[name], rng)

    def _restore(self, path: Path, file_id: int, rng: random.Random | None) -> None:
        data = self.synced.get(file_id, b"")
        now = bytes(self.content.get(file_id, b""))
        if rng is not None and now.startswith(data) and len(now) > len(data):
            data = now[: rng.randint(len(data), len(now))]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _surviving(self, folder: _Folder, rng: random.Random | None) -> dict[str, int]:
        names = dict(folder.durable)
        if rng is not None:
            for op, name, source, file_id in folder.pending[: rng.randint(0, len(folder.pending))]:
                if op == "rename" and source is not None:
                    names.pop(source, None)
                if op == "remove":
                    names.pop(name, None)
                else:
                    names[name] = file_id
        return names

    # -- bookkeeping -----------------------------------------------------------------------

    def _step(self, op: str, path: Path) -> None:
        if self.dead:
            raise PowerCut(f"{op} {path.name} after the power cut")
        self.calls += 1
        self.trace.append(f"{op} {path.name}")
        if self.crash_at is not None and self.calls >= self.crash_at:
            self.dead = True
            raise PowerCut(f"power cut at call {self.calls}: {op} {path.name}")

    def _folder(self, path: Path) -> _Folder:
        """The folder's model; what it holds when first seen counts as durable."""
        folder = self.folders.get(path)
        if folder is None:
            names: dict[str, int] = {}
            for entry in os.scandir(path):
                if entry.is_dir():
                    names[entry.name] = next(self._ids)
                    self.dirs.add(names[entry.name])
                elif entry.is_file() and not _is_lock(entry.name):
                    file_id = next(self._ids)
                    data = Path(entry.path).read_bytes()
                    self.content[file_id] = bytearray(data)
                    self.synced[file_id] = data
                    names[entry.name] = file_id
            folder = self.folders[path] = _Folder(names, dict(names))
        return folder


def _is_lock(name: str) -> bool:
    return name == "LOCK" or name.endswith(".lock")
