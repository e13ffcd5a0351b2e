"""One contract, two implementations: the same tests run against the log on disk (with default
and with tiny segments, so that rolling and sealing sit under every test) and the in-memory twin.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eventlog import (
    CapturePaused,
    CaptureResumed,
    ConfigChanged,
    DaemonStarted,
    DaemonStopped,
    Event,
    FrameCaptured,
    FramesDeleted,
    InMemoryLog,
    Log,
)
from eventlog.events import FRAME_TYPE, TYPE_CODES, is_control

DAY_US = 86_400_000_000
T0 = 1_700_000_000_000_000


def frame(offset: int, captured_us: int = T0, text: str = "hello", app: str = "term") -> Event:
    return FrameCaptured(
        ts_us=captured_us,
        frame_id=offset,
        captured_us=captured_us,
        app=app,
        title="a window",
        text=text,
        text_source="ocr",
    )


def config(n: int) -> ConfigChanged:
    return ConfigChanged(ts_us=T0 + n, config={"interval_s": n}, origin="cli")


@pytest.fixture(params=["disk", "disk-tiny-segments", "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "disk":
        return Log(tmp_path / "log")
    if request.param == "disk-tiny-segments":
        return Log(tmp_path / "log", segment_bytes=300)
    return InMemoryLog()


def append_frame(log: Any, captured_us: int = T0, text: str = "hello") -> int:
    with log.batch() as batch:
        return int(batch.append(frame(batch.next_offset, captured_us, text)))


def offsets(log: Any, start: int = 0) -> list[int]:
    return [record.offset for record in log.records(start)]


class TestLogContract:
    def test_appends_return_consecutive_offsets_from_zero(self, log: Any) -> None:
        assert log.next_offset() == 0
        got = [log.append(config(i)) for i in range(5)]
        assert got == [0, 1, 2, 3, 4]
        assert log.next_offset() == 5
        assert offsets(log) == got

    def test_a_frame_id_must_equal_its_offset(self, log: Any) -> None:
        log.append(config(0))
        with pytest.raises(ValueError, match="frame id 7"):
            log.append(frame(7))
        assert log.append(frame(1)) == 1
        assert offsets(log) == [0, 1]

    def test_a_batch_appends_consecutive_offsets_known_before_each_event_is_built(
        self, log: Any
    ) -> None:
        log.append(config(0))
        with log.batch() as batch:
            assert batch.next_offset == 1
            got = [batch.append(frame(batch.next_offset, T0 + i)) for i in range(4)]
        assert got == [1, 2, 3, 4]
        assert [e.frame_id for _, e in log.read(1)] == got

    def test_an_empty_batch_appends_nothing(self, log: Any) -> None:
        with log.batch():
            pass
        assert log.next_offset() == 0
        assert log.append(config(0)) == 0

    def test_an_exception_inside_a_batch_discards_all_of_it(self, log: Any) -> None:
        log.append(config(0))
        with pytest.raises(RuntimeError), log.batch() as batch:
            batch.append(config(1))
            batch.append(frame(batch.next_offset))
            raise RuntimeError("the import failed half way")
        assert offsets(log) == [0]
        assert log.append(config(2)) == 1  # the discarded offsets are given again

    def test_a_bad_frame_id_inside_a_batch_discards_the_batch(self, log: Any) -> None:
        with pytest.raises(ValueError), log.batch() as batch:
            batch.append(config(1))
            batch.append(frame(99))
        assert offsets(log) == []
        assert log.next_offset() == 0

    def test_read_round_trips_every_event(self, log: Any) -> None:
        appended = [
            config(1),
            frame(1, T0, "ls -la\ntotal 0"),
            CapturePaused(ts_us=T0, until_us=T0 + 60, origin="tool", reason="keyring locked"),
            CaptureResumed(ts_us=T0 + 60),
            FramesDeleted(ts_us=T0, upto_id=1, ids=(1,), app="firefox*", reason="user"),
            DaemonStarted(ts_us=T0, pid=42, version="0.1.0"),
            DaemonStopped(ts_us=T0, pid=42),
        ]
        for event in appended:
            log.append(event)
        assert list(log.read()) == list(enumerate(appended))
        assert list(log.read(4)) == list(enumerate(appended))[4:]

    def test_records_filter_by_start_and_type(self, log: Any) -> None:
        log.append(config(0))  # 0
        append_frame(log)  # 1
        log.append(FramesDeleted(ts_us=T0, upto_id=1))  # 2
        append_frame(log)  # 3
        log.append(config(1))  # 4
        frame_type, config_type = FRAME_TYPE, TYPE_CODES[ConfigChanged]

        assert offsets(log, 2) == [2, 3, 4]
        assert offsets(log, 5) == []
        assert [r.offset for r in log.records(types={frame_type})] == [1, 3]
        assert [r.offset for r in log.records(2, {frame_type})] == [3]
        assert [r.offset for r in log.records(0, {config_type})] == [0, 4]
        assert [o for o, _ in log.read(0, {config_type, frame_type})] == [0, 1, 3, 4]

    def test_holding_the_lock_lets_the_holder_append(self, log: Any) -> None:
        with log.locked():
            assert log.append(config(0)) == 0
            with log.batch() as batch:
                batch.append(config(1))
        assert offsets(log) == [0, 1]

    # -- compaction ----------------------------------------------------------------------------

    def test_compaction_drops_and_rewrites_records_keeping_their_offsets(self, log: Any) -> None:
        for i in range(10):
            if i % 3 == 0:
                log.append(config(i))
            else:
                append_frame(log, T0 + i, text=f"secret {i}")

        def redact(offset: int, event: Event) -> Event | None:
            if isinstance(event, FrameCaptured) and offset % 2 == 0:
                return None
            if isinstance(event, FrameCaptured):
                return msgspec.structs.replace(event, text="[redacted]")
            return event

        result = log.compact(redact)

        assert [offset for offset, _ in result.dropped] == [2, 4, 8]
        kept = list(log.read())
        assert [offset for offset, _ in kept] == [0, 1, 3, 5, 6, 7, 9]
        for offset, event in kept:
            if isinstance(event, FrameCaptured):
                assert (event.frame_id, event.text) == (offset, "[redacted]")
            else:
                assert event == config(offset)
        assert log.next_offset() == 10
        assert log.append(config(10)) == 10  # never renumbered, never reused
        assert log.verify() == []

    def test_compaction_that_changes_nothing_keeps_everything(self, log: Any) -> None:
        for i in range(5):
            append_frame(log, T0 + i)
        before = list(log.read())
        assert log.compact(lambda offset, event: event).dropped == []
        assert list(log.read()) == before

    def test_compacting_everything_away_never_restarts_numbering(self, log: Any) -> None:
        for i in range(7):
            append_frame(log, T0 + i)

        result = log.compact(lambda offset, event: None)

        assert [offset for offset, _ in result.dropped] == list(range(7))
        assert offsets(log) == []
        assert log.next_offset() == 7
        assert append_frame(log) == 7
        assert offsets(log) == [7]
        log.compact(lambda offset, event: None)
        assert log.append(config(0)) == 8
        assert log.verify() == []

    # -- retention -----------------------------------------------------------------------------

    def test_retention_removes_only_frames_captured_before_the_cutoff(self, log: Any) -> None:
        day = {i: T0 + i * DAY_US for i in range(5)}
        append_frame(log, day[0])  # 0 old
        log.append(config(1))  # 1
        append_frame(log, day[3])  # 2 new
        append_frame(log, day[1])  # 3 old, imported late
        log.append(FramesDeleted(ts_us=day[3], upto_id=2, reason="user"))  # 4
        append_frame(log, day[2])  # 5 exactly at the cutoff: kept
        append_frame(log, day[4])  # 6 new

        result = log.retain(day[2])

        assert sorted(offset for offset, _ in result.dropped) == [0, 3]
        assert offsets(log) == [1, 2, 4, 5, 6]
        assert log.next_offset() == 7
        assert log.verify() == []

    def test_retention_then_a_full_replay_keeps_config_tombstones_and_audit_trail(
        self, log: Any
    ) -> None:
        controls: list[Event] = []

        def control(event: Event) -> None:
            log.append(event)
            controls.append(event)

        for day in range(6):
            start = T0 + day * DAY_US
            control(DaemonStarted(ts_us=start, pid=100 + day))
            control(config(day))
            for minute in range(4):
                append_frame(log, start + minute * 60_000_000, text=f"day {day}")
            control(CapturePaused(ts_us=start + 1, until_us=start + 2))
            control(CaptureResumed(ts_us=start + 2))
            control(FramesDeleted(ts_us=start + 3, upto_id=log.next_offset() - 1, ids=(1,)))
            control(DaemonStopped(ts_us=start + 4, pid=100 + day))

        log.retain(T0 + 4 * DAY_US)
        log.retain(T0 + 10 * DAY_US)  # every frame goes: still no control event does

        replay = [event for _, event in log.read()]
        assert replay == controls  # the whole audit trail, in order
        assert [e for e in replay if isinstance(e, ConfigChanged)][-1] == config(5)
        assert sum(isinstance(e, FramesDeleted) for e in replay) == 6
        assert all(is_control(e) for e in replay)
        assert log.verify() == []

    def test_retention_with_nothing_old_changes_nothing(self, log: Any) -> None:
        for i in range(4):
            append_frame(log, T0 + i)
        before = list(log.read())
        assert log.retain(T0).dropped == []
        assert list(log.read()) == before

    # -- following -----------------------------------------------------------------------------

    def test_a_reader_polls_only_new_records(self, log: Any) -> None:
        reader = log.reader()
        assert reader.poll() == []
        for i in range(3):
            log.append(config(i))
        assert [r.offset for r in reader.poll()] == [0, 1, 2]
        assert reader.poll() == []
        log.append(config(3))
        append_frame(log)
        assert [r.offset for r in reader.poll(limit=1)] == [3]
        assert [r.offset for r in reader.poll()] == [4]
        assert [r.offset for r in log.reader(start=2).poll()] == [2, 3, 4]

    def test_a_reader_skips_what_compaction_removed(self, log: Any) -> None:
        for i in range(4):
            append_frame(log, T0 + i)
        reader = log.reader()
        assert [r.offset for r in reader.poll(limit=2)] == [0, 1]
        log.compact(lambda offset, event: None if offset == 2 else event)
        assert [r.offset for r in reader.poll()] == [3]

    def test_a_waiting_reader_wakes_when_a_record_is_appended(self, log: Any) -> None:
        reader = log.reader(start=log.next_offset())
        woken = threading.Event()

        def keep_appending() -> None:
            # Appends until the reader wakes, so a watcher set up late cannot miss them all.
            i = 0
            while not woken.wait(0.1):
                log.append(config(i))
                i += 1

        appender = threading.Thread(target=keep_appending)
        started = time.monotonic()
        appender.start()
        try:
            reader.wait(timeout=10)
        finally:
            woken.set()
            appender.join()
        assert time.monotonic() - started < 5  # woken, not timed out
        assert reader.poll()[0].offset == 0

    def test_an_append_just_before_the_first_wait_is_found_without_waiting_it_out(
        self, log: Any
    ) -> None:
        # As in follow mode: the caller caught up, then a frame landed before it waited.
        reader = log.reader(start=log.next_offset())
        assert reader.poll() == []
        log.append(config(1))
        started = time.monotonic()
        reader.wait(timeout=10)
        assert time.monotonic() - started < 2  # not the timeout
        assert [r.offset for r in reader.poll()] == [log.next_offset() - 1]

    def test_a_waiting_reader_returns_after_its_timeout(self, log: Any) -> None:
        started = time.monotonic()
        log.reader().wait(timeout=0.2)
        assert 0.1 < time.monotonic() - started < 5

    # -- checking ------------------------------------------------------------------------------

    def test_verify_finds_nothing_wrong_with_a_healthy_log(self, log: Any) -> None:
        for i in range(20):
            if i % 4 == 0:
                log.append(config(i))
            else:
                append_frame(log, T0 + i)
        log.compact(lambda offset, event: None if offset % 5 == 0 else event)
        log.retain(T0 + 10)
        append_frame(log)
        assert log.verify() == []


def drop_and_redact(offset: int, event: Event) -> Event | None:
    if not isinstance(event, FrameCaptured):
        return event
    if offset % 4 == 0:
        return None
    return msgspec.structs.replace(event, text="x") if offset % 3 == 0 else event


def test_both_logs_give_the_same_answers(tmp_path: Path) -> None:
    """The twin is only useful if it is a twin: the same script gives the same log."""

    def script(log: Any) -> Iterator[list[tuple[int, Event]]]:
        for i in range(30):
            if i % 7 == 0:
                log.append(config(i))
            else:
                append_frame(log, T0 + i * 1000, text=f"frame {i}")
        yield list(log.read())
        log.compact(drop_and_redact)
        yield list(log.read())
        log.retain(T0 + 15_000)
        yield list(log.read())
        yield [(log.next_offset(), config(0))]

    disk = list(script(Log(tmp_path / "log", segment_bytes=512)))
    memory = list(script(InMemoryLog()))
    assert disk == memory
