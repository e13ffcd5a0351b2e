"""Input from outside (a line of an import, a raw MCP request, a path a person names) and
commands run at once never lose what a person asked for, never hang and never end in a
traceback.

Each test reproduces a case of issue 24 and fails on the code before its fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from backscroll.store import MemoryStore
from base.config import DEFAULT_DENY


def backscroll(*args: str) -> subprocess.Popen[str]:
    """``backscroll *args`` as a process of its own, started and not waited for."""
    return subprocess.Popen(
        [sys.executable, "-m", "backscroll", *args],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_six_deny_adds_at_once_keep_all_six(backscroll_home: Path) -> None:
    """Each change was computed from the config the views held when the process read it,
    so a change appended meanwhile by another process was written over (2-4 of 6 kept)."""
    patterns = [f"Secret App {i}" for i in range(6)]
    started = [backscroll("deny", "add", pattern) for pattern in patterns]
    for process in started:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    with MemoryStore(backscroll_home) as store:
        assert set(store.config.deny_apps) == {*DEFAULT_DENY, *patterns}
    copy = json.loads((backscroll_home / "config.json").read_text())
    assert set(copy["deny_apps"]) == {*DEFAULT_DENY, *patterns}
