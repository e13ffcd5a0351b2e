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

import pytest

from backscroll.store import MemoryStore
from base.config import DEFAULT_DENY
from tests.helpers import run


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


GOOD = {"ts": 1_764_600_000, "app": "Terminal", "title": "zsh", "text": "kept word"}
UNREADABLE = {
    "a 5,000-digit integer": '{"ts": %s, "app": "a", "title": "b", "text": "c"}' % ("9" * 5000),
    "100,000-deep nesting": '{"ts": 1, "app": %s}' % ("[" * 100_000 + "]" * 100_000),
    "nesting the parser manages": '{"ts": 1, "app": %s}' % ("[" * 900 + "]" * 900),
    "a 4,000-digit time": '{"ts": %s, "app": "a", "title": "b", "text": "c"}' % ("9" * 4000),
}


def test_import_skip_bad_skips_unreadable_json_with_one_line_each(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5,000-digit integer (ValueError, not JSONDecodeError), nesting past the stack
    (RecursionError) and a time no float holds (OverflowError) ended the import with a
    traceback, --skip-bad or not."""
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join([*UNREADABLE.values(), json.dumps(GOOD)]) + "\n")
    code, _, err = run(capsys, "import", "--skip-bad", str(source))
    assert code == 0, err
    skipped = [line for line in err.splitlines() if line.startswith("skipped line")]
    assert len(skipped) == len(UNREADABLE), err
    assert "Traceback" not in err
    with MemoryStore(backscroll_home) as store:
        assert [hit.id for hit in store.search("kept")] != []
    for bad in UNREADABLE.values():
        source.write_text(bad + "\n")
        code, _, err = run(capsys, "import", str(source))
        assert (code, err.count("\n")) == (1, 1), err
        assert err.startswith("backscroll: line 1: "), err


def test_config_json_edited_into_unreadable_json_is_refused_and_shown(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config.json is read by every command; nesting past the stack made each of them end
    in a traceback."""
    assert run(capsys, "deny", "add", "MyBank")[0] == 0
    path = backscroll_home / "config.json"
    for edit in (UNREADABLE["100,000-deep nesting"], '{"retention_days": %s}' % ("9" * 5000)):
        path.write_text(edit)
        for command in ("status", "resume"):  # a reader, then a writer
            code, _, err = run(capsys, command)
            assert code == 0, err
        assert "config.json edit refused (not JSON that can be read" in run(capsys, "status")[1]
        assert "MyBank" in run(capsys, "deny", "list")[1]
