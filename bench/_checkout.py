"""The code of another git revision, for a bench that measures it beside this tree in the
same run (its folder first on PYTHONPATH, and as the working directory, of a subprocess)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """``rev`` in a temporary git worktree, removed after."""
    folder = Path(tempfile.mkdtemp(prefix="bench-rev-"))
    target = folder / "tree"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(target), rev],
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        yield target
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(target)],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)
