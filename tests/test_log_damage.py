"""Damage to the log's files besides the records, and the copies the log keeps aside.

Each test reproduces a case of issue 24 and fails on the code before its fix: a damaged
header of a sealed segment (with one ``clear``, it bricked the store), a flipped bit in
``log/NEXT``, torn tails that kept their text through ``clear`` and were never reported, and
a changed key that ``verify`` did not see.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from backscroll.importer import import_frames
from backscroll.manage import delete
from backscroll.store import MemoryStore
from eventlog import codec
from eventlog.events import DamageFound, FrameCaptured, PurgeCompleted
from eventlog.folder import NEXT_NAME, read_next
from eventlog.format import BLOCK, HEADER
from eventlog.log import Log
from eventlog.segment import pack_record
from tests.helpers import frame_event, run
from tests.residue import files_containing

T = 1_764_600_000  # 2025-12-01, epoch seconds
APPS = ["Terminal", "Browser", "Slack", "Editor"]


def line(i: int, text: str = "") -> str:
    body = text or f"word{i:05d} " + " ".join(f"filler{j}" for j in range(40))
    app = APPS[i % 4]
    return json.dumps({"ts": T + i, "app": app, "title": f"{app} window", "text": body})


def sealed_store(home: Path, frames: int = 200) -> MemoryStore:
    store = MemoryStore(home, write=True)
    store.log.segment_bytes = 16 * 1024  # seal often: several sealed segments
    for start in range(0, frames, 25):
        import_frames(store, [line(i) for i in range(start, min(frames, start + 25))])
    return store


def frames_by_app(home: Path) -> dict[int, str]:
    log = Log(home / "log")
    return {e.frame_id: e.app for _, e in log.read() if isinstance(e, FrameCaptured)}


# -- case 1: a damaged header of a sealed segment -------------------------------------------


@pytest.mark.parametrize("which", [0, -1], ids=["first-sealed", "last-sealed"])
def test_a_damaged_segment_header_neither_refuses_clear_nor_bricks_the_store(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    store = sealed_store(backscroll_home)
    delete(store, app="Slack")  # a compaction: the active segment is sealed
    segment = [s for s in store.log.segments() if s.sealed][which]
    data = bytearray(segment.path.read_bytes())
    data[20] ^= 0x01  # created_us: the header's checksum fails
    segment.path.write_bytes(bytes(data))
    held = {
        e.frame_id
        for _, e in Log(backscroll_home / "log").read()
        if isinstance(e, FrameCaptured) and segment.base <= e.frame_id
    }

    code, _, err = run(capsys, "clear", "--app", "Browser", "-y")
    assert code == 0, err
    expected = {i: a for i, a in frames_by_app(backscroll_home).items() if a != "Browser"}
    assert set(expected.values()) == {"Terminal", "Editor"} and held & set(expected)
    for args in (["status"], ["timeline"], ["pause", "10m"], ["resume"]):
        code, _, err = run(capsys, *args)
        assert code == 0, (args, err)
    words = json.loads(run(capsys, "search", "filler7", "--limit", "500", "--json")[1])
    assert {m["id"] for m in words["matches"]} == set(expected)

    code, out, _ = run(capsys, "verify")
    assert code == 1 and "kept aside" in out and out.count("\n") == 2, out
    code, _, err = run(capsys, "clear", "--damaged", "-y")
    assert code == 0, err
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    assert frames_by_app(backscroll_home) == expected  # the header held no frame: none lost


def test_a_damaged_segment_header_is_rewritten_by_clear_damaged_alone(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = sealed_store(backscroll_home)
    everything = frames_by_app(backscroll_home)
    segment = store.log.segments()[1]
    data = bytearray(segment.path.read_bytes())
    data[HEADER.size - 1] ^= 0x80  # the checksum itself
    segment.path.write_bytes(bytes(data))

    code, out, _ = run(capsys, "verify")
    assert code == 1 and "header checksum mismatch: clear --damaged" in out, out
    assert "missing" not in out  # the segment still covers its offsets
    assert run(capsys, "clear", "--damaged", "-y")[0] == 0
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    assert frames_by_app(backscroll_home) == everything


def test_a_log_that_ends_in_a_sealed_segment_with_a_damaged_header_goes_on(
    tmp_path: Path,
) -> None:
    log = Log(tmp_path / "log")
    for offset in range(6):
        log.append(frame_event(offset))
    log.compact(lambda offset, event: None if offset == 5 else event)  # seals 0..5, ends there
    (segment,) = log.segments()
    assert segment.sealed
    data = bytearray(segment.path.read_bytes())
    data[30] ^= 0x04  # end_offset
    segment.path.write_bytes(bytes(data))

    reader = Log(log.path)
    assert (reader.next_offset(), reader.lost_tail()) == (6, None)
    assert [p.message for p in reader.verify()] == [
        "header checksum mismatch: clear --damaged rewrites it"
    ]
    assert Log(log.path).append(frame_event(6)) == 6
    assert log.compact(lambda _, e: e, repair=True).undecodable == 0
    assert [o for o, e in log.read() if isinstance(e, FrameCaptured)] == [0, 1, 2, 3, 4, 6]
    (kept, *_) = log.verify()
    assert kept.message.startswith("64 unreadable bytes (may have held no offset) kept aside")


# -- case 4: a flipped bit in log/NEXT ------------------------------------------------------


@pytest.mark.parametrize("bit", [0, 5, 31, 48, 63])
def test_a_flipped_bit_in_next_is_found_and_writing_goes_on_from_the_segments(
    tmp_path: Path, bit: int
) -> None:
    log = Log(tmp_path / "log")
    for offset in range(5):
        log.append(frame_event(offset))
    path = log.path / NEXT_NAME
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))

    problems = Log(log.path).verify()
    assert [p.segment for p in problems] == [NEXT_NAME], problems
    reader = Log(log.path)
    assert (reader.next_offset(), reader.lost_tail()) == (5, None)

    assert Log(log.path).append(frame_event(5)) == 5  # no frame id jumps, none reused
    assert not [e for _, e in log.read() if isinstance(e, DamageFound)]  # nothing "lost"
    assert log.verify() == []
    assert read_next(log.path) == 6


def test_a_store_whose_next_is_damaged_says_so_in_one_line_and_the_next_write_repairs_it(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join(line(i) for i in range(5)) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    before = sorted(frames_by_app(backscroll_home))
    path = backscroll_home / "log" / NEXT_NAME
    data = bytearray(path.read_bytes())
    data[7] ^= 0x80  # the top bit: an offset no frame id may take
    path.write_bytes(bytes(data))

    code, out, _ = run(capsys, "verify")
    assert code == 1 and out.count("\n") == 2 and "NEXT" in out, out
    source.write_text(line(5) + "\n")
    code, _, err = run(capsys, "import", str(source))
    assert code == 0, err
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    # (The store's first event records its key: the frames are 1..5, and the new one 6.)
    assert sorted(frames_by_app(backscroll_home)) == [*before, before[-1] + 1]


# -- case 13: torn tails and other copies kept aside, against deletion and verify -----------


def tear(home: Path, app: str, text: str, whole: bool) -> None:
    """Leave at the end of the active segment a frame's record that did not make it: cut off
    (an append a crash cut short), or whole with a failing checksum (damaged after it
    returned)."""
    log = Log(home / "log")
    offset = log.next_offset()
    frame = FrameCaptured(
        ts_us=T * 10**6, frame_id=offset, captured_us=T * 10**6, app=app, title="t", text=text
    )
    record = bytearray(pack_record(codec.type_code(frame), offset, codec.encode(frame)))
    if whole:
        record[4] ^= 0xFF  # the record's CRC
    else:
        record = record[: len(record) - 5]
    with open(log.segments()[-1].path, "ab") as f:
        f.write(record)


@pytest.mark.parametrize("whole", [False, True], ids=["cut-off", "whole-record"])
def test_a_torn_tail_is_reported_by_verify_and_its_text_goes_with_clear(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, whole: bool
) -> None:
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join(line(i) for i in range(8)) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    tear(backscroll_home, "Slack", "zanzibar quokka", whole)
    assert run(capsys, "pause", "10m")[0] == 0  # a writer keeps the torn tail aside
    (torn,) = (backscroll_home / "log").glob("*.torn")
    assert files_containing(backscroll_home, "zanzibar") == [str(torn)]

    code, out, _ = run(capsys, "verify")
    assert code == 1 and torn.name in out, out

    # A deletion whose scope the copy's frame is not in leaves a copy that decodes alone.
    assert run(capsys, "clear", "--app", "Editor", "-y")[0] == 0
    assert torn.exists() == whole

    assert run(capsys, "clear", "-y")[0] == 0
    assert files_containing(backscroll_home, "zanzibar") == []
    purges = [e for _, e in Log(backscroll_home / "log").read() if isinstance(e, PurgeCompleted)]
    assert [p.aside for p in purges if p.aside] == [(torn.name,)]
    code, out, _ = run(capsys, "verify")
    if whole:  # offsets an append had returned are gone: said until acknowledged
        assert code == 1 and "removed by a deletion" in out and out.count("\n") == 2, out
        assert run(capsys, "clear", "--damaged", "-y")[0] == 0
    assert run(capsys, "verify")[:2] == (0, "healthy\n")


def test_clear_damaged_removes_torn_tails_no_event_names(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join(line(i) for i in range(3)) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    tear(backscroll_home, "Slack", "zanzibar quokka", whole=False)
    assert run(capsys, "pause", "10m")[0] == 0
    assert run(capsys, "verify")[0] == 1
    assert run(capsys, "clear", "--damaged", "-y")[0] == 0
    assert files_containing(backscroll_home, "zanzibar") == []
    assert run(capsys, "verify")[:2] == (0, "healthy\n")


def test_the_residue_scanner_reads_the_copy_of_a_damaged_block(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = sealed_store(home, frames=100)
    first = store.log.segments()[0]
    data = bytearray(first.path.read_bytes())
    data[HEADER.size + 8] ^= 0xFF  # the first block's checksum: its data is whole
    first.path.write_bytes(bytes(data))
    store.log.compact(lambda _, e: e, repair=True)  # kept aside in damaged/, then left out
    (copy,) = (home / "log" / "damaged").iterdir()
    assert copy.read_bytes()[: BLOCK.size][:4] == b"BLK\0"
    assert any(where.startswith(str(copy)) for where in files_containing(home, "word00000"))


def test_verify_names_the_files_an_interrupted_compaction_staged_and_a_writer_removes_them(
    tmp_path: Path,
) -> None:
    log = Log(tmp_path / "log")
    for offset in range(3):
        log.append(frame_event(offset, text="zanzibar quokka"))
    segment = log.segments()[0].path
    staged = log.path / (segment.name.replace(".seg", ".zst") + ".new")
    staged.write_bytes(segment.read_bytes())  # a crash before the compaction's commit point

    problems = Log(log.path).verify()
    assert [p.segment for p in problems] == [staged.name], problems
    assert "interrupted compaction left 1 staged file(s)" in problems[0].message
    log.append(frame_event(3))
    assert not staged.exists() and log.verify() == []


# -- also worth a look: a changed key -------------------------------------------------------


@pytest.mark.parametrize("where", ["key-file", "key-file-and-keyinfo"])
def test_verify_reports_a_changed_key(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    from backscroll import keys

    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join(line(i) for i in range(3)) + "\n")
    assert run(capsys, "import", str(source))[0] == 0  # thumbnails are encrypted: a key
    assert run(capsys, "verify")[:2] == (0, "healthy\n")
    other = bytes(range(keys.KEY_BYTES))
    (backscroll_home / keys.KEY_FILE).write_text(keys._encode(other) + "\n")
    if where == "key-file-and-keyinfo":
        info = keys.KeyInfo(store="file", fingerprint=keys.fingerprint(other))
        (backscroll_home / keys.KEYINFO_FILE).write_bytes(msgspec.json.encode(info))

    code, out, _ = run(capsys, "verify")
    assert code == 1 and out.count("\n") == 2 and out.startswith("key: "), out
    assert keys.fingerprint(other) in out
