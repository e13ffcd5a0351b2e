"""One contract, two implementations: the same tests run against the log on disk (with default
and with tiny segments, so that rolling and sealing sit under every test) and the in-memory twin.

``LogContract`` holds the tests; each backend's class only says how to make its log, as
pyeventsourcing's ``AggregateRecorderTestCase`` does. What only the disk log has (torn tails,
damage kept aside, power cuts) is tested in ``test_eventlog_disk.py`` and
``test_eventlog_crash.py``.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import (
    CapturePaused,
    CaptureResumed,
    Compacted,
    ConfigChanged,
    DaemonStarted,
    DaemonStopped,
    Event,
    EventLog,
    FrameCaptured,
    FramesDeleted,
    InMemoryLog,
    Log,
    Transform,
)
from eventlog.events import FRAME_TYPE, TYPE_CODES, is_control
from eventlog.segment import Problem
from projector.runner import Projector
from projector.state import State

DAY_US = 86_400_000_000
T0 = 1_700_000_000_000_000


def frame(
    offset: int, captured_us: int = T0, text: str = "hello", app: str = "term"
) -> FrameCaptured:
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


def append_frame(
    log: EventLog, captured_us: int = T0, text: str = "hello", app: str = "term"
) -> int:
    with log.batch() as batch:
        return batch.append(frame(batch.next_offset, captured_us, text, app))


def offsets(log: EventLog, start: int = 0) -> list[int]:
    return [record.offset for record in log.records(start)]


class LogContract:
    """The contract's tests; a backend's class gives ``make`` and nothing else."""

    def make(self, tmp_path: Path) -> EventLog:
        raise NotImplementedError

    @pytest.fixture
    def log(self, tmp_path: Path) -> EventLog:
        return self.make(tmp_path)

    def test_appends_return_consecutive_offsets_from_zero(self, log: EventLog) -> None:
        assert log.next_offset() == 0
        got = [log.append(config(i)) for i in range(5)]
        assert got == [0, 1, 2, 3, 4]
        assert log.next_offset() == 5
        assert offsets(log) == got

    def test_a_frame_id_must_equal_its_offset(self, log: EventLog) -> None:
        log.append(config(0))
        with pytest.raises(ValueError, match="frame id 7"):
            log.append(frame(7))
        assert log.append(frame(1)) == 1
        assert offsets(log) == [0, 1]

    def test_a_batch_appends_consecutive_offsets_known_before_each_event_is_built(
        self, log: EventLog
    ) -> None:
        log.append(config(0))
        with log.batch() as batch:
            assert batch.next_offset == 1
            got = [batch.append(frame(batch.next_offset, T0 + i)) for i in range(4)]
        assert got == [1, 2, 3, 4]
        assert [e.frame_id for _, e in log.read(1) if isinstance(e, FrameCaptured)] == got

    def test_an_empty_batch_appends_nothing(self, log: EventLog) -> None:
        with log.batch():
            pass
        assert log.next_offset() == 0
        assert log.append(config(0)) == 0

    def test_a_batch_may_skip_offsets_but_never_go_back(self, log: EventLog) -> None:
        # A restored archive keeps each event at its offset, gaps included.
        log.append(config(0))
        with log.batch() as batch:
            batch.skip_to(5)
            assert batch.append(frame(5)) == 5
            with pytest.raises(ValueError, match="offset 5 is before the next one, 6"):
                batch.skip_to(5)
            batch.skip_to(6)  # where it is: nothing skipped
            assert batch.append(config(6)) == 6
        assert offsets(log) == [0, 5, 6]
        assert log.next_offset() == 7
        assert log.append(config(7)) == 7

    def test_an_exception_inside_a_batch_discards_all_of_it(self, log: EventLog) -> None:
        log.append(config(0))
        with pytest.raises(RuntimeError), log.batch() as batch:
            batch.append(config(1))
            batch.append(frame(batch.next_offset))
            raise RuntimeError("the import failed half way")
        assert offsets(log) == [0]
        assert log.append(config(2)) == 1  # the discarded offsets are given again

    def test_a_bad_frame_id_inside_a_batch_discards_the_batch(self, log: EventLog) -> None:
        with pytest.raises(ValueError), log.batch() as batch:
            batch.append(config(1))
            batch.append(frame(99))
        assert offsets(log) == []
        assert log.next_offset() == 0

    def test_read_round_trips_every_event(self, log: EventLog) -> None:
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

    def test_records_filter_by_start_and_type(self, log: EventLog) -> None:
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

    def test_reading_from_inside_a_gap_starts_at_the_next_kept_offset(self, log: EventLog) -> None:
        for i in range(6):
            append_frame(log, T0 + i)
        log.compact(lambda offset, event: None if offset in (2, 3) else event)
        assert offsets(log, 2) == [4, 5]
        assert [offset for offset, _ in log.read(3)] == [4, 5]
        assert offsets(log, 6) == []

    def test_a_read_left_part_way_leaves_the_log_usable(self, log: EventLog) -> None:
        # As a rebuild of some months does: it stops reading at the views' position.
        for i in range(40):
            append_frame(log, T0 + i)

        def first_ten() -> list[int]:
            taken: list[int] = []
            for offset, _ in log.read():
                if offset == 10:
                    return taken  # the reading generator is dropped here, unfinished
                taken.append(offset)
            return taken

        assert first_ten() == list(range(10))
        assert log.append(config(0)) == 40
        assert offsets(log, 39) == [39, 40]

    def test_a_healthy_log_reads_without_problems(self, log: EventLog) -> None:
        log.append(config(0))
        append_frame(log)
        problems: list[Problem] = []
        assert [offset for offset, _ in log.read(problems=problems)] == [0, 1]
        assert [record.offset for record in log.records(1, None, problems)] == [1]
        assert problems == []

    def test_next_offset_is_what_the_next_append_gets(self, log: EventLog) -> None:
        with log.batch() as batch:
            assert batch.next_offset == log.next_offset() == 0
            batch.append(config(0))
            batch.append(config(1))
        assert log.next_offset() == 2
        with log.locked():
            expected = log.next_offset()
            assert log.append(config(2)) == expected == 2
        log.compact(lambda offset, event: None)
        assert log.next_offset() == 3

    def test_an_unchanged_mark_means_nothing_was_appended(self, log: EventLog) -> None:
        seen = {log.mark()}
        for i in range(6):
            assert log.mark() == log.mark()
            if i % 2:
                log.append(config(i))
            else:
                append_frame(log, T0 + i)
            assert log.mark() not in seen
            seen.add(log.mark())

    # -- locking ---------------------------------------------------------------------------------

    def test_holding_the_lock_lets_the_holder_append(self, log: EventLog) -> None:
        with log.locked():
            assert log.append(config(0)) == 0
            with log.batch() as batch:
                batch.append(config(1))
        assert offsets(log) == [0, 1]

    def test_while_one_holds_the_lock_no_other_thread_appends(self, log: EventLog) -> None:
        appended = threading.Event()

        def other() -> None:
            log.append(config(1))
            appended.set()

        thread = threading.Thread(target=other)
        with log.locked():
            thread.start()
            assert not appended.wait(0.2)
            assert log.next_offset() == 0  # stable while held: nothing else appends
            assert log.append(config(0)) == 0
        thread.join(10)
        assert appended.is_set()
        assert list(log.read()) == [(0, config(0)), (1, config(1))]

    def test_a_batch_holds_the_lock_until_it_is_written(self, log: EventLog) -> None:
        thread = threading.Thread(target=lambda: log.append(config(9)))
        with log.batch() as batch:
            thread.start()
            time.sleep(0.1)
            batch.append(config(0))
            batch.append(config(1))
        thread.join(10)
        assert list(log.read()) == [(0, config(0)), (1, config(1)), (2, config(9))]

    # -- compaction ----------------------------------------------------------------------------

    def test_compaction_drops_and_rewrites_records_keeping_their_offsets(
        self, log: EventLog
    ) -> None:
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

    def test_compaction_that_changes_nothing_keeps_everything(self, log: EventLog) -> None:
        for i in range(5):
            append_frame(log, T0 + i)
        before = list(log.read())
        assert log.compact(lambda offset, event: event) == Compacted(dropped=[], rewritten=0)
        assert list(log.read()) == before

    def test_compaction_reports_what_it_did_in_events(self, log: EventLog) -> None:
        appended: list[Event] = []
        for i in range(12):
            if i % 4 == 0:
                log.append(config(i))
                appended.append(config(i))
            else:
                append_frame(log, T0 + i, text=f"frame {i}")
                appended.append(frame(i, T0 + i, f"frame {i}"))

        def drop_some_redact_others(offset: int, event: Event) -> Event | None:
            if not isinstance(event, FrameCaptured):
                return event
            if offset % 4 == 1:
                return None
            return msgspec.structs.replace(event, text="x") if offset % 4 == 2 else event

        result = log.compact(drop_some_redact_others)

        assert result == Compacted(dropped=[(o, appended[o]) for o in (1, 5, 9)], rewritten=3)
        again = log.compact(drop_some_redact_others)  # nothing left to drop; replaced anew
        assert again == Compacted(dropped=[], rewritten=3)

    def test_an_equal_copy_counts_as_a_rewrite(self, log: EventLog) -> None:
        # Compaction compares identity: a transform that rebuilt the event rewrote it.
        log.append(config(0))
        log.append(config(1))
        result = log.compact(lambda o, e: msgspec.structs.replace(e) if o == 1 else e)
        assert result == Compacted(dropped=[], rewritten=1)
        assert list(log.read()) == [(0, config(0)), (1, config(1))]

    def test_repairing_a_healthy_log_changes_nothing(self, log: EventLog) -> None:
        for i in range(5):
            append_frame(log, T0 + i)
        before = list(log.read())
        assert log.compact(lambda offset, event: event, repair=True) == Compacted([], 0, 0)
        assert list(log.read()) == before
        assert log.next_offset() == 5

    def test_compacting_everything_away_never_restarts_numbering(self, log: EventLog) -> None:
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

    def test_retention_removes_only_frames_captured_before_the_cutoff(self, log: EventLog) -> None:
        day = {i: T0 + i * DAY_US for i in range(5)}
        append_frame(log, day[0])  # 0 old
        log.append(config(1))  # 1
        append_frame(log, day[3])  # 2 new
        append_frame(log, day[1])  # 3 old, imported late
        log.append(FramesDeleted(ts_us=day[3], upto_id=2, reason="user"))  # 4
        append_frame(log, day[2])  # 5 exactly at the cutoff: kept
        append_frame(log, day[4])  # 6 new

        result = log.retain(day[2])

        assert [offset for offset, _ in result.dropped] == [0, 3]
        assert (result.rewritten, result.undecodable) == (0, 0)
        assert offsets(log) == [1, 2, 4, 5, 6]
        assert log.next_offset() == 7
        assert log.verify() == []

    def test_retention_then_a_full_replay_keeps_config_tombstones_and_audit_trail(
        self, log: EventLog
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

    def test_retention_with_nothing_old_changes_nothing(self, log: EventLog) -> None:
        for i in range(4):
            append_frame(log, T0 + i)
        before = list(log.read())
        assert log.retain(T0).dropped == []
        assert list(log.read()) == before

    # -- following -----------------------------------------------------------------------------

    def test_a_reader_polls_only_new_records(self, log: EventLog) -> None:
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

    def test_a_reader_skips_what_compaction_removed(self, log: EventLog) -> None:
        for i in range(4):
            append_frame(log, T0 + i)
        reader = log.reader()
        assert [r.offset for r in reader.poll(limit=2)] == [0, 1]
        log.compact(lambda offset, event: None if offset == 2 else event)
        assert [r.offset for r in reader.poll()] == [3]

    def test_a_waiting_reader_wakes_when_a_record_is_appended(self, log: EventLog) -> None:
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
        self, log: EventLog
    ) -> None:
        # As in follow mode: the caller caught up, then a frame landed before it waited.
        reader = log.reader(start=log.next_offset())
        assert reader.poll() == []
        log.append(config(1))
        started = time.monotonic()
        reader.wait(timeout=10)
        assert time.monotonic() - started < 2  # not the timeout
        assert [r.offset for r in reader.poll()] == [log.next_offset() - 1]

    def test_a_waiting_reader_returns_after_its_timeout(self, log: EventLog) -> None:
        started = time.monotonic()
        log.reader().wait(timeout=0.2)
        assert 0.1 < time.monotonic() - started < 5

    def test_a_waiting_reader_returns_once_stopped(self, log: EventLog) -> None:
        reader = log.reader(start=log.next_offset())
        stop = threading.Event()
        reader.wait(timeout=0.01, stop=stop)  # the disk reader's first wait starts its watcher
        timer = threading.Timer(0.2, stop.set)
        started = time.monotonic()
        timer.start()
        try:
            reader.wait(timeout=10, stop=stop)
        finally:
            timer.cancel()
        assert time.monotonic() - started < 5

    # -- checking ------------------------------------------------------------------------------

    def test_verify_finds_nothing_wrong_with_a_healthy_log(self, log: EventLog) -> None:
        for i in range(20):
            if i % 4 == 0:
                log.append(config(i))
            else:
                append_frame(log, T0 + i)
        log.compact(lambda offset, event: None if offset % 5 == 0 else event)
        log.retain(T0 + 10)
        append_frame(log)
        assert log.verify() == []

    def test_a_healthy_log_has_nothing_lost_or_kept_aside(self, log: EventLog) -> None:
        assert (log.lost_tail(), log.kept_aside()) == (None, [])
        for i in range(8):
            append_frame(log, T0 + i)
        log.retain(T0 + 4)
        assert (log.lost_tail(), log.kept_aside()) == (None, [])


class TestDiskLog(LogContract):
    def make(self, tmp_path: Path) -> EventLog:
        return Log(tmp_path / "log")


class TestDiskLogWithTinySegments(LogContract):
    def make(self, tmp_path: Path) -> EventLog:
        return Log(tmp_path / "log", segment_bytes=300)


class TestInMemoryLog(LogContract):
    def make(self, tmp_path: Path) -> EventLog:
        return InMemoryLog()


# -- the twin is a twin ------------------------------------------------------------------------


def drop_and_redact(offset: int, event: Event) -> Event | None:
    if not isinstance(event, FrameCaptured):
        return event
    if offset % 4 == 0:
        return None
    return msgspec.structs.replace(event, text="x") if offset % 3 == 0 else event


def test_both_logs_give_the_same_answers(tmp_path: Path) -> None:
    """The twin is only useful if it is a twin: the same script gives the same log."""

    def script(log: EventLog) -> Iterator[object]:
        for i in range(30):
            if i % 7 == 0:
                log.append(config(i))
            else:
                append_frame(log, T0 + i * 1000, text=f"frame {i}")
        yield list(log.read())
        yield log.compact(drop_and_redact)
        yield list(log.read())
        yield log.retain(T0 + 15_000)
        yield list(log.read())
        yield [(log.next_offset(), config(0))]

    disk = list(script(Log(tmp_path / "log", segment_bytes=512)))
    memory = list(script(InMemoryLog()))
    assert disk == memory


Step = tuple[str, int]
steps = st.lists(
    st.tuples(st.sampled_from(["frame", "config", "batch", "drop", "retain"]), st.integers(0, 40)),
    max_size=30,
)


def every(n: int) -> Transform:
    """Drops every ``n``-th offset."""
    return lambda offset, event: None if offset % n == 0 else event


def run_steps(log: EventLog, script: list[Step]) -> Iterator[object]:
    for step, n in script:
        if step == "frame":
            yield append_frame(log, T0 + n, text=f"frame {n}")
        elif step == "config":
            yield log.append(config(n))
        elif step == "batch":
            with log.batch() as batch:
                for i in range(n % 5):
                    batch.append(frame(batch.next_offset, T0 + n + i))
        elif step == "drop":
            yield log.compact(every(n + 2))
        else:
            yield log.retain(T0 + n)
    yield list(log.read())
    yield log.next_offset()


@settings(max_examples=25, deadline=None)
@given(steps)
def test_any_script_gives_the_same_answers_from_both_logs(script: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        disk = list(run_steps(Log(Path(folder) / "log", segment_bytes=400), script))
    assert disk == list(run_steps(InMemoryLog(), script))


def test_the_projector_builds_the_same_state_from_either_log(tmp_path: Path) -> None:
    def script(log: EventLog) -> None:
        log.append(config(1))
        for i in range(30):
            app = "firefox" if i % 3 else "term"
            append_frame(log, T0 + i * 3 * DAY_US, text=f"frame {i} alpha", app=app)
        log.append(FramesDeleted(ts_us=T0, upto_id=log.next_offset() - 1, app="firefox"))
        log.append(CapturePaused(ts_us=T0, origin="tool", reason="keyring locked"))

    def comparable(state: State) -> State:
        # The log's mark is the backend's own token; a purge's completion is stamped now.
        deletions = [msgspec.structs.replace(d, completed_us=None) for d in state.deletions]
        return msgspec.structs.replace(state, log_mark=None, deletions=deletions)

    states = []
    for name, log in (("disk", Log(tmp_path / "disk" / "log")), ("memory", InMemoryLog())):
        script(log)
        with Projector(tmp_path / name, log) as projector:
            projector.catch_up()
            assert projector.expire(T0 + 40 * DAY_US) > 0
            states.append(comparable(projector.state))
    disk, memory = states
    assert disk == memory
    assert disk.deletions[0].frames == 20
    assert disk.totals().frames == 5  # the terminal's frames from day 40 on
