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

from backscroll import _import_lines, importer
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
    assert read(_import_lines._row, line) == read(before, line)


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


# --- many lines: prepared by worker processes ----------------------------------------------

SECRET = "password: hunter2hunter2"


def rows(count: int, bad: int | None = None) -> list[str]:
    """Import lines, one in seven holding a secret, every tenth blank; ``bad``: that line
    number (from 1) has no text."""
    lines = []
    for i in range(count):
        row = {"ts": 1_764_000_000 + i, "app": f"app{i % 3}", "title": f"page {i}"}
        row["text"] = f"frame{i} words {i % 17} " + (SECRET if i % 7 == 0 else "plain")
        if i + 1 == bad:
            del row["text"]
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


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any import is prepared by worker processes, a few lines to a chunk."""
    monkeypatch.setattr(_import_lines, "WORKER_BYTES", 0)
    monkeypatch.setattr(_import_lines, "MIN_CORES", 1)
    monkeypatch.setattr(_import_lines, "CHUNK_LINES", 7)


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_workers_store_what_the_import_stores_in_its_own_process(
    encrypted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = rows(300)
    got = []
    for workers in (False, True):
        if workers:
            monkeypatch.setattr(_import_lines, "WORKER_BYTES", 0)
            monkeypatch.setattr(_import_lines, "MIN_CORES", 1)
            monkeypatch.setattr(_import_lines, "CHUNK_LINES", 7)
            assert _import_lines.workers_for(0) >= 1
        with MemoryStore(tmp_path / f"home-{workers}", write=True) as store:
            store.set_config(encrypt_text=encrypted)
            assert import_frames(store, lines).imported == 270
            got.append(stored(store))
            assert len(store.search("frame77")) == 1
            assert store.search("hunter2hunter2") == []
    assert got[0] == got[1]
    assert got[1][0][3] == "frame0 words 0 password: [REDACTED:password]"
    assert [frame[0] for frame in got[1]] == sorted(frame[0] for frame in got[1])


def test_the_pool_prepares_chunks_in_their_order_as_this_process_does() -> None:
    preparer = _import_lines.Preparer(2**60, True, None)
    chunks = [[(n, line) for n, line in enumerate(rows(40)[i : i + 5], i + 1)] for i in (0, 5)]
    preparing = _import_lines.Preparing(2)
    try:
        assert preparing.pool is not None
        assert list(preparing.map(preparer, chunks)) == [preparer(c, {}) for c in chunks]
    finally:
        preparing.close()


@pytest.mark.usefixtures("workers")
def test_a_bad_last_line_stops_an_import_prepared_by_workers_before_anything_is_appended(
    backscroll_home: Path,
) -> None:
    with MemoryStore(write=True) as store:
        before = store.log.next_offset()
        with pytest.raises(UsageError, match="line 299: missing 'text'; nothing was imported"):
            import_frames(store, rows(300, bad=299))
        assert store.log.next_offset() == before
        result = import_frames(store, rows(300, bad=299), skip_bad=True)
        assert (result.imported, result.skipped) == (269, ["line 299: missing 'text'"])


def test_workers_that_cannot_start_leave_the_lines_to_the_import(tmp_path: Path) -> None:
    # A script that imports at its top level, without `if __name__ == "__main__"`: each
    # spawned worker runs it again, and stops at its start.
    lines = tmp_path / "lines.jsonl"
    lines.write_text("\n".join(rows(100)) + "\n")
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import backscroll._import_lines as lines\n"
        "from backscroll.importer import import_frames\n"
        "from backscroll.store import MemoryStore\n"
        "lines.WORKER_BYTES, lines.MIN_CORES, lines.CHUNK_LINES = 0, 1, 7\n"
        f"with MemoryStore(write=True) as store, open({str(lines)!r}) as rows:\n"
        "    print(import_frames(store, rows).imported)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "90\n"
    assert "bootstrapping phase" in done.stderr  # the workers did try, and failed


def test_ctrl_c_during_an_import_with_workers_leaves_whole_batches_and_no_process(
    tmp_path: Path, backscroll_home: Path
) -> None:
    source = tmp_path / "big.jsonl"
    text = "ordinary screen text, nothing secret in it " * 12
    with source.open("w") as out:
        for i in range(20_000):
            row = {"ts": 1_764_000_000 + i, "app": "a", "title": "t", "text": f"{i} {text}"}
            out.write(json.dumps(row) + "\n")
    script = tmp_path / "importing.py"
    script.write_text(
        "import sys\n"
        "import backscroll._import_lines as lines\n"
        "from backscroll.cli import main\n"
        "if __name__ == '__main__':\n"
        "    lines.MIN_CORES = 1  # workers, whatever the cores\n"
        "    sys.argv = ['backscroll', 'import', '--no-meaning', sys.argv[1]]\n"
        "    main()\n"
    )
    # In a session of its own, so that Ctrl-C reaches its group as a terminal sends it.
    importing = subprocess.Popen(
        [sys.executable, str(script), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    while importing.poll() is None and _appended(backscroll_home) < 1_000:
        time.sleep(0.05)  # until the first batch is appended
    os.killpg(importing.pid, signal.SIGINT)
    _, err = importing.communicate(timeout=300)
    assert importing.returncode == 130, err
    assert "Traceback" not in err
    assert not [pid for pid in os.listdir("/proc") if _alive_in(pid, importing.pid)]
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "verify"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with MemoryStore() as store:
        frames = [event for _, event in store.log.read(0) if isinstance(event, FrameCaptured)]
    assert 0 < len(frames) < 20_000 and len(frames) % 1_000 == 0
    assert [frame.captured_us for frame in frames] == sorted(frame.captured_us for frame in frames)


def _appended(home: Path) -> int:
    """The events of the log at ``home``, read as another process reads it."""
    if not (home / "log").exists():
        return 0
    with MemoryStore(home) as store:
        return store.log.next_offset()


def _alive_in(pid: str, group: int) -> bool:
    """Whether process ``pid`` runs in process group ``group``: not gone, not a zombie (an
    exited worker that this container's init has not reaped yet)."""
    if not pid.isdigit():
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    state, _, pgrp = stat.rpartition(")")[2].split()[:3]
    return state != "Z" and int(pgrp) == group


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
