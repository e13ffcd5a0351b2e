"""Where a store lives on disk, and the file-mode rules for everything under it."""

from __future__ import annotations

import os
from pathlib import Path

from backscroll.errors import DiskFullError, is_disk_full

DEFAULT_HOME = Path("~/.backscroll")


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The store folder: ``home`` if given, else ``$BACKSCROLL_HOME``, else ``~/.backscroll``."""
    chosen = home if home is not None else os.environ.get("BACKSCROLL_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser().absolute()


def is_default_home(home: Path) -> bool:
    return home == DEFAULT_HOME.expanduser().absolute()


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
