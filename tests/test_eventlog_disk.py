"""The log on disk: segment files, rolling and sealing, file modes, and surviving damage.

Corruption tests flip or cut bytes at seeded random places (the seed is in the test id) and
check that the damage is found and located, that everything else still reads, and that no
exception escapes.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec
import pytest
import zstandard

import eventlog.log
import eventlog.segment
from base.errors import DiskFullError
from base.fs import FileSystem, WritableFile
from eventlog import ConfigChanged, Event, FrameCaptured, FramesDeleted, Log
from eventlog.active import ActiveIndex
from eventlog.format import BLOCK, HEADER, NAME_DIGITS
from eventlog.segment import Problem, scan_records, unpack_header
from tests.helpers import T0, besides_torn_tails, frame_event

DAY_US = 86_400_000_000


def append_frame(log: Log, captured_us: int = T0, text: str = "") -> int:
    with log.batch() as batch:
        return batch.append(frame_event(batch.next_offset, captured_us, text))


def fill(log: Log, count: int) -> list[tuple[int, Event]]:
    """``count`` events, every fifth a control event; returns what was appended."""
    appended: list[tuple[int, Event]] = []
    for i in range(count):
        with log.batch() as batch:
            offset = batch.next_offset
            event: Event = (
                ConfigChanged(ts_us=T0 + i, config={"i": i})
                if i % 5 == 0
                else frame_event(offset, T0 + i * 1_000_000)
            )
            batch.append(event)
        appended.append((offset, event))
    return appended


class Clock:
    def __init__(self, us: int) -> None:
        self.us = us

    def __call__(self) -> int:
        return self.us


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock(T0)
    monkeypatch.setattr(eventlog.log, "now_us", clock)
    monkeypatch.setattr(eventlog.segment, "now_us", clock)
    return clock


# -- segments ----------------------------------------------------------------------------------


def test_segments_roll_by_size_and_all_but_the_last_are_sealed(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=4096)
    appended = fill(log, 120)

    segments = log.segments()
    assert len(segments) > 3
    assert [s.sealed for s in segments] == [True] * (len(segments) - 1) + [False]
    for segment in segments[:-1]:
        assert segment.path.suffix == ".zst"
        data = segment.path.read_bytes()
        assert zstandard.frame_header_size(data[HEADER.size + BLOCK.size :]) > 0
    assert list(log.read()) == appended
    assert log.verify() == []


def test_segment_files_are_named_by_their_20_digit_base_offset(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=2048)
    fill(log, 60)
    bases = [record.offset for record in log.records()]
    for segment in log.segments():
        stem = segment.path.name.split(".")[0]
        assert len(stem) == NAME_DIGITS and stem.isdigit()
        assert int(stem) == segment.base == unpack_header(segment.path.read_bytes()).base_offset
        assert segment.base in bases  # nothing compacted: each segment starts at its base
    assert log.segments()[0].path.name == "00000000000000000000.zst"


def test_a_sealed_segment_reads_from_any_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eventlog.segment, "BLOCK_BYTES", 1024)  # several blocks per segment
    log = Log(tmp_path / "log", segment_bytes=8192)
    appended = fill(log, 150)
    log.compact(lambda offset, event: None if offset % 7 == 3 else event)  # leave gaps
    expected = [(o, e) for o, e in appended if o % 7 != 3]
    assert _blocks(log.segments()[0].path.read_bytes()) > 1

    for start in range(0, 152):
        assert list(log.read(start)) == [(o, e) for o, e in expected if o >= start], start


def test_a_sealed_segment_is_read_without_decompressing_the_blocks_before_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eventlog.segment, "BLOCK_BYTES", 1024)
    log = Log(tmp_path / "log", segment_bytes=16384)
    fill(log, 100)
    first = log.segments()[0]
    assert first.sealed and _blocks(first.path.read_bytes()) > 3
    last_block_start = _block_firsts(first.path.read_bytes())[-1]

    decompressed = []
    real = zstandard.ZstdDecompressor

    class CountingDecompressor:  # a wrapper: subclassing zstandard's C type crashes its GC
        def __init__(self) -> None:
            self.inner = real()

        def decompress(self, data: bytes) -> bytes:
            decompressed.append(len(data))
            return self.inner.decompress(data)

    monkeypatch.setattr(eventlog.segment.zstandard, "ZstdDecompressor", CountingDecompressor)
    last_sealed = log.segments()[1].base - 1
    assert last_sealed >= last_block_start
    record = next(log.records(last_sealed))
    assert record.offset == last_sealed
    assert len(decompressed) == 1


def test_segments_roll_at_the_first_append_of_a_new_utc_day(tmp_path: Path, clock: Clock) -> None:
    log = Log(tmp_path / "log")
    clock.us = T0  # 22:13 UTC
    append_frame(log)
    clock.us = T0 + 3600_000_000  # 23:13, same day
    append_frame(log)
    assert [s.sealed for s in log.segments()] == [False]

    clock.us = T0 + 2 * 3600_000_000  # 00:13 the next day
    assert append_frame(log) == 2
    segments = log.segments()
    assert [(s.base, s.sealed) for s in segments] == [(0, True), (2, False)]
    assert unpack_header(segments[1].path.read_bytes()).created_us == clock.us
    assert [o for o, _ in log.read()] == [0, 1, 2]
    assert log.verify() == []


def test_an_empty_active_segment_is_not_rolled(tmp_path: Path, clock: Clock) -> None:
    log = Log(tmp_path / "log")
    append_frame(log)
    log.compact(lambda offset, event: None)  # seals the active segment, drops everything
    clock.us += 3 * DAY_US
    assert append_frame(log, clock.us) == 1
    assert [(s.base, s.sealed) for s in log.segments()] == [(0, True), (1, False)]


def test_a_reopened_log_continues_numbering_after_everything_was_compacted_away(
    tmp_path: Path,
) -> None:
    log = Log(tmp_path / "log", segment_bytes=1024)
    fill(log, 30)
    log.compact(lambda offset, event: None)
    again = Log(tmp_path / "log")
    assert again.next_offset() == 30
    assert append_frame(again) == 30
    assert [o for o, _ in again.read()] == [30]


def test_retention_drops_whole_old_segments_and_compacts_mixed_ones(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=2048)
    for day in range(4):
        for _ in range(15):
            append_frame(log, T0 + day * DAY_US)
    log.append(FramesDeleted(ts_us=T0, upto_id=3))
    before = {s.path.name for s in log.segments()}

    log.retain(T0 + 2 * DAY_US)

    after = log.segments()
    assert len(after) < len(before)
    for event in (event for _, event in log.read()):
        assert not isinstance(event, FrameCaptured) or event.captured_us >= T0 + 2 * DAY_US
    assert sum(isinstance(e, FramesDeleted) for _, e in log.read()) == 1
    assert log.verify() == []


def test_files_are_private_to_the_user(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        path = tmp_path / "deep" / "log"
        log = Log(path, segment_bytes=1024)
        fill(log, 30)
        log.compact(lambda offset, event: None if offset % 2 else event)
        append_frame(log)
        with open(log.segments()[-1].path, "ab") as f:
            f.write(b"torn")  # so recovery writes a .torn file too
        append_frame(log)
    finally:
        os.umask(previous)
    assert any(p.name.endswith(".torn") for p in path.iterdir())
    for folder in (tmp_path / "deep", path):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for file in path.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


def test_verify_finds_nothing_wrong_with_a_healthy_log(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=1024)
    fill(log, 50)
    log.retain(T0 + 20_000_000)
    fill(log, 10)
    assert log.verify() == []
    assert log.disk_bytes() == sum(s.path.stat().st_size for s in log.segments())


# -- damage ------------------------------------------------------------------------------------


class Unit(NamedTuple):
    """A stretch of a segment file that damage spoils as a whole: header, record or block."""

    start: int
    stop: int
    offsets: list[int]


def _blocks(data: bytes) -> int:
    return len(_block_firsts(data))


def _block_firsts(data: bytes) -> list[int]:
    return [unit.offsets[0] for unit in _units(data, sealed=True, base=0) if unit.offsets]


def _units(data: bytes, sealed: bool, base: int) -> list[Unit]:
    units = [Unit(0, HEADER.size, [])]
    if not sealed:
        scan = scan_records(data, HEADER.size, "x", base - 1)
        assert not scan.torn and not scan.problems
        positions = [pos for pos, _ in scan.records] + [len(data)]
        for (pos, record), stop in zip(scan.records, positions[1:], strict=True):
            units.append(Unit(pos, stop, [record.offset]))
        return units
    pos = HEADER.size
    while pos < len(data):
        _magic, length, _crc, first, last, _count = BLOCK.unpack_from(data, pos)
        stop = pos + BLOCK.size + length
        records = eventlog.segment._sealed_records(data[: HEADER.size] + data[pos:stop], "x", 0, [])
        units.append(Unit(pos, stop, [r.offset for r in records]))
        assert units[-1].offsets[0] == first and units[-1].offsets[-1] == last
        pos = stop
    return units


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Sealed segments of several blocks each, and an active segment of 20 records."""
    path = tmp_path_factory.mktemp("healthy") / "log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(eventlog.segment, "BLOCK_BYTES", 2048)
        log = Log(path, segment_bytes=8192)
        fill(log, 90)
        while (
            len(scan_records(log.segments()[-1].path.read_bytes(), HEADER.size, "x").records) < 20
        ):
            fill(log, 1)
    assert log.verify() == []
    yield path


@pytest.fixture
def damaged(healthy: Path, tmp_path: Path) -> Log:
    path = tmp_path / "log"
    shutil.copytree(healthy, path)
    return Log(path)


def _everything_readable(log: Log) -> list[int]:
    """Read in every way a reader can; nothing may raise. Returns the offsets read."""
    offsets = [record.offset for record in log.records()]
    assert [o for o, _ in log.read()] == offsets
    assert [r.offset for r in log.reader().poll()] == offsets
    for start in offsets[::7]:
        assert [r.offset for r in log.records(start)] == [o for o in offsets if o >= start]
    log.next_offset()
    return offsets


def _pick(log: Log, rng: random.Random, sealed: bool) -> tuple[Path, bytes, list[Unit]]:
    segments = [s for s in log.segments() if s.sealed == sealed]
    segment = rng.choice(segments)
    data = segment.path.read_bytes()
    return segment.path, data, _units(data, sealed, segment.base)


def _located(problems: list[Problem], name: str, position: int) -> bool:
    return any(p.segment == name and p.position == position for p in problems)


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "active"])
@pytest.mark.parametrize("seed", range(25))
def test_a_flipped_byte_is_found_located_and_read_around(
    damaged: Log, seed: int, sealed: bool
) -> None:
    rng = random.Random(seed)
    everything = _everything_readable(damaged)
    path, data, units = _pick(damaged, rng, sealed)
    position = rng.randrange(len(data))
    spoiled = next(u for u in units if u.start <= position < u.stop)
    path.write_bytes(
        data[:position] + bytes([data[position] ^ rng.randint(1, 255)]) + data[position + 1 :]
    )

    problems = damaged.verify()

    assert _located(problems, path.name, spoiled.start), (position, spoiled, problems)
    assert _everything_readable(damaged) == [o for o in everything if o not in spoiled.offsets]
    assert path.read_bytes() != data  # readers and verify repair nothing

    # The next writer appends after everything still readable (a spoiled last record looks
    # torn: it is kept aside and its offset is given again).
    offset = append_frame(damaged)
    assert offset > max(_everything_readable(damaged)[:-1])
    assert not any("torn" in p.message for p in damaged.verify())


@pytest.mark.parametrize("seed", range(15))
def test_a_cut_sealed_segment_is_found_located_and_the_rest_reads(damaged: Log, seed: int) -> None:
    rng = random.Random(seed)
    everything = _everything_readable(damaged)
    path, data, units = _pick(damaged, rng, sealed=True)
    cut = rng.randrange(len(data))
    path.write_bytes(data[:cut])

    problems = damaged.verify()

    spoiled = next(u for u in units if u.start <= cut < u.stop)
    lost = {o for u in units if u.stop > cut for o in u.offsets}
    if cut == spoiled.start and spoiled.start != 0:  # cut between blocks: only counts tell
        assert _located(problems, path.name, 0), problems
    else:
        assert _located(problems, path.name, spoiled.start), (cut, spoiled, problems)
    assert _everything_readable(damaged) == [o for o in everything if o not in lost]
    assert append_frame(damaged) == everything[-1] + 1


@pytest.mark.parametrize("seed", range(15))
def test_a_torn_active_segment_is_read_up_to_the_tear_and_the_next_writer_keeps_it_aside(
    damaged: Log, seed: int
) -> None:
    rng = random.Random(seed)
    everything = _everything_readable(damaged)
    path, data, units = _pick(damaged, rng, sealed=False)
    cut = rng.randrange(HEADER.size + 1, len(data))
    torn = data[:cut]
    path.write_bytes(torn)
    kept = [o for u in units if u.stop <= cut for o in u.offsets]
    tear = max((u.stop for u in units if u.stop <= cut), default=HEADER.size)

    readable = _everything_readable(damaged)
    problems = damaged.verify()

    assert readable == [o for o in everything if o < min(units[1].offsets) or o in kept]
    if cut != tear:
        assert _located(problems, path.name, tear), (cut, tear, problems)
    assert path.read_bytes() == torn  # a reader leaves the tear alone
    assert not list(path.parent.glob("*.torn"))

    offset = append_frame(damaged)

    # The records cut away had been acknowledged: their offsets are never handed out again,
    # and the loss is recorded and reported (a crash only ever tears an append that has not
    # returned, which the log had not handed out yet).
    assert offset == everything[-1] + 2  # after the frames and the record of the loss
    aside = list(path.parent.glob("*.torn"))
    if cut != tear:
        assert [p.name for p in aside] == [f"{path.name}.{tear}.torn"]
        assert aside[0].read_bytes() == torn[tear:]
    lost = besides_torn_tails(damaged.verify())
    assert lost and all(p.message.startswith("lost offsets") for p in lost), lost
    assert _everything_readable(damaged) == [*readable, offset - 1, offset]


def test_a_reader_a_few_events_behind_reads_them_from_the_active_segments_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log(tmp_path / "log")
    appended = fill(log, 5)
    active = log.segments()[-1].path
    whole = active.read_bytes()
    with monkeypatch.context() as spy:
        # Not scanned from the start: up to 64 MB for the last few events.
        spy.setattr(ActiveIndex, "refresh", lambda self: pytest.fail("scanned"))
        reader = Log(tmp_path / "log")
        assert (reader.next_offset(), reader.lost_tail()) == (5, None)
        assert list(reader.read(3)) == appended[3:]
    torn = whole + b"\x07" * 40  # an append in progress, or damage: scanned from the start
    for cut, next_offset, lost in (
        (torn, 5, None),
        (whole[:-3], 4, (4, 4)),
        (whole[:64], 0, (0, 4)),
    ):
        active.write_bytes(cut)
        reader = Log(tmp_path / "log")
        assert (reader.next_offset(), reader.lost_tail()) == (next_offset, lost), len(cut)
        assert list(reader.read(3)) == appended[3:next_offset], len(cut)


def test_a_cut_inside_the_active_segments_header_is_repaired_by_the_next_writer(
    damaged: Log,
) -> None:
    path = damaged.segments()[-1].path
    lost_from = damaged.segments()[-1].base
    path.write_bytes(path.read_bytes()[:30])

    assert _located(damaged.verify(), path.name, 0)
    assert max(_everything_readable(damaged)) == lost_from - 1

    assert append_frame(damaged) > lost_from  # the lost offsets are never handed out again
    assert [p.name for p in path.parent.glob("*.torn")] == [f"{path.name}.0.torn"]
    assert [p.offset for p in besides_torn_tails(damaged.verify())] == [lost_from]


def test_an_empty_active_segment_left_by_a_crash_is_given_a_header(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    fill(log, 3)
    log.compact(lambda offset, event: None if offset == 1 else event)  # seals 0..2
    (log.path / "00000000000000000003.seg").write_bytes(b"")  # crash before the header

    assert log.append(ConfigChanged(ts_us=T0, config={})) == 3
    assert log.append(ConfigChanged(ts_us=T0, config={"a": 1})) == 4
    assert [o for o, _ in Log(log.path).read()] == [0, 2, 3, 4]
    assert log.verify() == []


def test_a_second_tear_at_the_same_place_does_not_overwrite_the_first(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    fill(log, 3)
    active = log.segments()[-1].path
    for garbage in (b"first torn write", b"second"):
        with open(active, "ab") as f:
            f.write(garbage)
        with log.batch():  # the next writer repairs, even one that appends nothing
            pass
    kept = sorted(p.read_bytes() for p in log.path.glob("*.torn"))
    assert kept == [b"first torn write", b"second"]
    assert besides_torn_tails(log.verify()) == []


class FullDisk(FileSystem):
    """Appends write ``room`` bytes, then fail as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room

    def append(self, path: Path) -> WritableFile:
        f = super().append(path)
        room = self.room

        def write(data: bytes | memoryview) -> None:
            WritableFile.write(f, bytes(data)[:room])
            raise OSError(errno.ENOSPC, "No space left on device")

        f.write = write  # type: ignore[method-assign]
        return f


@pytest.mark.parametrize("room", [0, 1, 100, 10_000])
def test_a_batch_whose_write_fails_leaves_nothing_behind(tmp_path: Path, room: int) -> None:
    log = Log(tmp_path / "log")
    fill(log, 3)
    before = log.segments()[-1].path.read_bytes()
    full = Log(tmp_path / "log", fs=FullDisk(room))

    with pytest.raises(DiskFullError, match="the disk is full"), full.batch() as batch:
        for _ in range(20):  # whole records fit in the room the disk had
            batch.append(frame_event(batch.next_offset))

    assert log.segments()[-1].path.read_bytes() == before
    assert append_frame(log) == 3
    assert not list(log.path.glob("*.torn"))
    assert log.verify() == []


def test_readers_never_fail_while_a_writer_appends_rolls_and_compacts(tmp_path: Path) -> None:
    writer = Log(tmp_path / "log", segment_bytes=2048)
    fill(writer, 20)
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(60):
                fill(writer, 1)
                if i % 10 == 0:  # rewrite every segment: each one is swapped under the reader
                    writer.compact(lambda offset, event: msgspec.structs.replace(event))
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    reader = Log(tmp_path / "log")
    follower = reader.reader()
    followed: list[int] = []
    reads = 0
    while not done.is_set() or reads < 5:
        floor = reader.next_offset()  # appended before this read began
        offsets = [record.offset for record in reader.records()]
        assert offsets == sorted(set(offsets))
        assert offsets[: min(floor, len(offsets))] == list(range(min(floor, len(offsets))))
        assert len(offsets) >= floor
        followed += [record.offset for record in follower.poll()]
        # Reader-side calls must not fail either. (What verify reports while a writer is
        # mid-append or mid-swap is checked elsewhere, on a quiet log.)
        reader.verify()
        assert reader.disk_bytes() > 0
        reads += 1
    thread.join()
    assert not failures
    assert [r.offset for r in reader.records()] == list(range(80))
    followed += [record.offset for record in follower.poll()]
    assert followed == list(range(80))
    assert reader.verify() == []
