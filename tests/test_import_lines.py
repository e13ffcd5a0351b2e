"""An import line is read the same whichever parser reads it, and a bad one anywhere still
leaves the store as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backscroll import importer
from backscroll.importer import import_frames, parse_import_line
from backscroll.store import MemoryStore
from base import jsontext
from base.errors import UsageError, is_text
from eventlog.events import FrameCaptured

# Pieces of JSON and of what breaks it: the reader msgspec runs first must refuse every line
# Python's parser refuses (NaN, a BOM, a lone surrogate, a raw control character, a number
# past 4,300 digits, nesting) and read every other line it takes as Python does.
PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        ":",
        ",",
        " ",
        "\n",
        "\t",
        "\r",
        "\x0c",
        "\\",
        "\\u",
        "d800",
        "\\ud800",
        "\\udc00",
        "\\ud83d\\ude00",
        "\\n",
        "\\/",
        "NaN",
        "Infinity",
        "-",
        "+",
        "0",
        "1",
        "1.5",
        "e",
        "E+",
        "1e400",
        "9" * 20,
        "9" * 4400,
        ".",
        "true",
        "false",
        "null",
        '"ts"',
        '"app"',
        '"text"',
        "\x01",
        "\ufeff",
        "é",
        "\udc80",
        "\u00a0",
        "\u2028",
    ]
)
SCALARS = (
    st.none()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner))
LINES = (
    st.lists(PIECES, max_size=24).map("".join)
    | st.dictionaries(st.text(max_size=6) | st.sampled_from(["ts", "app", "text"]), VALUES).map(
        json.dumps
    )
    | st.dictionaries(st.text(max_size=6), SCALARS).map(lambda row: json.dumps(row)[:-1])
)


def typed(value: Any) -> Any:
    """``value`` with each number's type kept, so 1 and 1.0 compare unequal."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def before(line: str) -> Any:
    """How an import line was read before msgspec read it first."""
    if not is_text(line):
        raise UsageError("not UTF-8 text")
    row = jsontext.parse(line)
    if not isinstance(row, dict):
        raise UsageError("not a JSON object")
    return row


def read(reader: Any, line: str) -> Any:
    try:
        return typed(reader(line))
    except (UsageError, ValueError):
        return "refused"


@given(line=LINES)
def test_an_import_line_reads_as_pythons_parser_reads_it(line: str) -> None:
    assert read(importer._row, line) == read(before, line)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"ts": NaN, "app": "a", "title": "b", "text": "c"}', "'ts' nan is not a time"),
        ('{"ts": 1e400, "app": "a", "title": "b", "text": "c"}', "'ts' inf is not a time"),
        ('{"ts": 1, "app": "\\ud800", "title": "b", "text": "c"}', "lone surrogate"),
        ('{"ts": 1, "app": "a", "title": "b", "text": "c", "x": [[[]]]}', None),
        ('{"ts": 1, "app": "a", "title": "b", "text": "c", "x": %s}' % ("9" * 20), None),
        ('{"ts": %s, "app": "a", "title": "b", "text": "c"}' % ("9" * 30), "is not a time"),
        ("[1]", "not a JSON object"),
    ],
)
def test_a_line_the_quick_reader_refuses_gets_the_message_it_always_had(
    line: str, message: str | None
) -> None:
    if message is None:
        assert parse_import_line(line, 2**60).text == "c"
        return
    with pytest.raises(UsageError, match=message):
        parse_import_line(line, 2**60)


# --- many lines: kept by the check, or read again ------------------------------------------

SECRET = "password: hunter2hunter2"


def rows(count: int) -> list[str]:
    """Import lines, one in seven holding a secret, every tenth blank."""
    lines = []
    for i in range(count):
        row = {"ts": 1_764_000_000 + i, "app": f"app{i % 3}", "title": f"page {i}"}
        row["text"] = f"frame{i} words {i % 17} " + (SECRET if i % 7 == 0 else "plain")
        lines.append("" if i % 10 == 9 else json.dumps(row))
    return lines


def stored(store: MemoryStore) -> list[tuple[Any, ...]]:
    """Every frame as it reads back: its time, app, title, text, redactions, tokens."""
    crypto = store.ensure_crypto() if store.config.encrypt_text else None
    frames = []
    for _, event in store.log.read(0):
        if isinstance(event, FrameCaptured):
            text = crypto.decrypt_text(event.frame_id, event.ciphertext) if crypto else event.text
            tokens = crypto.blind_tokens(text) if crypto else ()
            assert event.blind_tokens == tokens
            frames.append((event.captured_us, event.app, event.title, text, event.redactions))
    return frames


def test_lines_kept_by_the_check_and_lines_read_again_are_stored_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = rows(60)
    got = []
    for keep in (0, 900, importer.KEEP_CHARACTERS):  # none, the first few lines, all
        monkeypatch.setattr(importer, "KEEP_CHARACTERS", keep)
        with MemoryStore(tmp_path / f"home-{keep}", write=True) as store:
            assert import_frames(store, lines).imported == 54
            got.append(stored(store))
    assert got[0] == got[1] == got[2]


def test_ctrl_c_during_an_import_leaves_whole_batches_in_order(
    tmp_path: Path, backscroll_home: Path
) -> None:
    source = tmp_path / "big.jsonl"
    text = "ordinary screen text, nothing secret in it " * 12
    with source.open("w") as out:
        for i in range(20_000):
            row = {"ts": 1_764_000_000 + i, "app": "a", "title": "t", "text": f"{i} {text}"}
            out.write(json.dumps(row) + "\n")
    # In a session of its own, so that Ctrl-C reaches its group as a terminal sends it.
    importing = subprocess.Popen(
        [sys.executable, "-m", "backscroll", "import", "--no-meaning", str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    while importing.poll() is None and appended(backscroll_home) < 1_000:
        time.sleep(0.05)  # until the first batch is appended
    os.killpg(importing.pid, signal.SIGINT)
    _, err = importing.communicate(timeout=300)
    assert importing.returncode == 130, err
    assert "Traceback" not in err
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "verify"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with MemoryStore() as store:
        frames = [event for _, event in store.log.read(0) if isinstance(event, FrameCaptured)]
    assert 0 < len(frames) < 20_000 and len(frames) % 1_000 == 0
    assert [frame.captured_us for frame in frames] == sorted(frame.captured_us for frame in frames)


def appended(home: Path) -> int:
    """The events of the log at ``home``, read as another process reads it."""
    if not (home / "log").exists():
        return 0
    with MemoryStore(home) as store:
        return store.log.next_offset()
