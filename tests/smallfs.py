"""A real, small filesystem for the full-disk tests: a tmpfs the test mounts on its own folder.

    with small_filesystem(tmp_path / "small", size=32 * MB) as fs:
        fs.leave_free(4 * MB)   # a filler file takes all but 4 MB
        fs.fill()               # the filler takes every block left: the next write fails
        fs.free()               # bytes free, as statvfs tells an ordinary process
        fs.release()            # the filler is deleted

A real filesystem rather than a fake file layer: the point is what Tantivy (Rust, writing
through its own file layer) and every ``open``/``write``/``fsync`` in Python do when the disk
says ENOSPC, and only the kernel says it the way a full disk does. tmpfs needs no image file
or loop device, and its size is exact to the page. Mounting needs root (CI runs as root);
elsewhere, or where the container forbids mounts, the test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

MB = 1024 * 1024
FILLER = "filler"
_CHUNK = MB
_PAGE = 4096


class SmallFS:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / FILLER

    def free(self) -> int:
        st = os.statvfs(self.root)
        return st.f_bavail * st.f_frsize

    def describe(self) -> str:
        """For assertion messages: what the filesystem holds now."""
        st = os.statvfs(self.root)
        size = st.f_blocks * st.f_frsize
        return f"{self.free():,} of {size:,} bytes free on {self.root}"

    def leave_free(self, nbytes: int) -> None:
        """Grow the filler until about ``nbytes`` (to the page) are left free."""
        self._grow(max(0, self.free() - nbytes))

    def fill(self) -> None:
        """Grow the filler until the filesystem refuses another page."""
        self._grow(None)

    def release(self) -> None:
        self.filler.unlink(missing_ok=True)

    def _grow(self, nbytes: int | None) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = _CHUNK
            left = nbytes
            while left is None or left > 0:
                size = chunk if left is None else min(chunk, left)
                try:
                    written = os.write(fd, b"\0" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    if chunk == _PAGE:
                        break
                    chunk = _PAGE  # a short tail of pages may still fit
                    continue
                if left is not None:
                    left -= written
            os.fsync(fd)
        finally:
            os.close(fd)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextlib.contextmanager
def small_filesystem(root: Path, size: int) -> Iterator[SmallFS]:
    """Mount a tmpfs of ``size`` bytes on ``root``; unmount it afterwards, whatever happened."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs the tests as root)")
    root.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(root))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield SmallFS(root)
    finally:
        # Tantivy's readers hold their files mapped until their Python objects are freed.
        gc.collect()
        if subprocess.run(["umount", str(root)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "--lazy", str(root)], check=True)
