"""The daemon's parts, each alone and for real, without a desktop: the recorder, the
projector thread (with housekeeping), the heartbeat, the pause hotkey and the AT-SPI
announcement. The
capture loop and the camera need a screen: tests/test_camera.py and tests/test_daemon.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backscroll.announcement import Announcement
from backscroll.heartbeat import Heartbeat, HeartbeatFile, read_heartbeat
from backscroll.manage import delete
from backscroll.pause_hotkey import PauseHotkey
from backscroll.projector_thread import ProjectorThread
from backscroll.record import Recorder
from backscroll.store import MemoryStore
from base.clock import now_us
from base.config import Config
from capture.seen import Seen
from eventlog.events import FRAME_TYPE, FrameCaptured, FramesDeleted
from headless import wait_for

DAY_US = 86_400_000_000


def seen(text: str = "quarterly invoice from the printer company", days_ago: int = 0) -> Seen:
    return Seen(
        captured_us=now_us() - days_ago * DAY_US,
        app="Zenity",
        title="notes",
        text=text,
        text_source="ax",
        reason="app_change",
        jpeg=b"\xff\xd8" + bytes(2000),
        signature=bytes(576),
    )


@pytest.fixture
def store(backscroll_home: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore(backscroll_home, write=True, catch_up=False)
    yield opened
    opened.close()


def frames(store: MemoryStore) -> list[FrameCaptured]:
    return [e for _, e in store.log.read(types={FRAME_TYPE}) if isinstance(e, FrameCaptured)]


def test_the_recorder_appends_each_frame_redacted_and_counts_it_for_the_heartbeat(
    store: MemoryStore,
) -> None:
    recorder = Recorder(store)
    config = store.config.replace(encrypt_text=False, encrypt_thumbnails=False)
    recorder.record(seen(), config)
    recorder.record(seen("id AKIAQXRYONJ3DYBVZXG2 ok"), config)
    stored = frames(store)
    assert len(stored) == 2 and stored[0].text == "quarterly invoice from the printer company"
    assert stored[1].text == "id [REDACTED:aws_key] ok"
    assert recorder.text_sources == {"ax": 2} and recorder.reasons == {"app_change": 2}
    assert sum(recorder.redactions.values()) == 1
    assert (recorder.last_reason, recorder.last_text_source) == ("app_change", "ax")
    assert all((store.home / f.thumb).read_bytes()[:2] == b"\xff\xd8" for f in stored if f.thumb)


def test_the_recorder_encrypts_as_the_config_says(store: MemoryStore) -> None:
    recorder = Recorder(store)
    frame = recorder.record(seen(), store.config.replace(encrypt_text=True))
    assert frame.encrypted and frame.text == "" and frame.ciphertext
    assert frame.thumb is not None and frame.thumb.endswith(".enc")


def test_a_frame_seen_before_a_clear_and_recorded_after_it_is_dropped(store: MemoryStore) -> None:
    # Issue 24, case 2: the frame being read (a slow OCR) while `clear` ran was appended after
    # the tombstone, past its upto_id, and stayed searchable.
    recorder = Recorder(store)
    config = store.config.replace(encrypt_text=False, encrypt_thumbnails=False)
    recorder.record(seen("a frame recorded before the clear"), config)
    in_flight = seen("zygomorphic text seen while the clear ran")
    delete(store)
    assert recorder.record(in_flight, config) is None
    assert frames(store) == []
    assert not list((store.home / "thumbs").rglob("*.jpg"))
    assert recorder.record(seen("seen after the clear"), config) is not None
    store.refresh()
    assert store.search("zygomorphic") == []
    assert [f.text for f in frames(store)] == ["seen after the clear"]


def test_a_scoped_deletion_drops_only_the_frames_in_flight_it_covers(store: MemoryStore) -> None:
    recorder = Recorder(store)
    config = store.config.replace(encrypt_text=False, encrypt_thumbnails=False)
    other = seen("another app's window")._replace(app="XTerm")
    covered, too_old = seen("in the scope"), seen("before the span", days_ago=3)
    now = datetime.now(UTC)
    delete(store, app="zenity", start=now - timedelta(days=1), end=now + timedelta(minutes=1))
    assert recorder.record(covered, config) is None
    assert recorder.record(other, config) is not None
    assert recorder.record(too_old, config) is not None
    assert sorted(f.text for f in frames(store)) == ["another app's window", "before the span"]


def run_in_thread(part: ProjectorThread) -> threading.Thread:
    thread = threading.Thread(target=part.run, name="projector")
    thread.start()
    return thread


def test_the_projector_thread_makes_recorded_frames_searchable_until_it_is_stopped(
    store: MemoryStore,
) -> None:
    stop = threading.Event()
    thread = run_in_thread(ProjectorThread(store, lambda: store.config, stop, 0.1))
    try:
        Recorder(store).record(seen(), store.config)
        hits = wait_for(lambda: store.search("invoice"), "the frame in the index")
        assert [hit.app for hit in hits] == ["Zenity"]
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


@pytest.mark.meaning
def test_the_projector_thread_embeds_frames_in_the_background_after_their_words(
    store: MemoryStore,
) -> None:
    from projector import embedder
    from projector.vectors import Manifest

    if not embedder.available():
        pytest.skip("the meaning model is not installed")
    stop = threading.Event()
    thread = run_in_thread(ProjectorThread(store, lambda: store.config, stop, 0.1))
    try:
        Recorder(store).record(seen(), store.config)
        view = store.home / "views" / "meaning"
        wait_for(lambda: Manifest.load(view).frames == 1, "the frame embedded")
        hits = wait_for(
            lambda: store.search("a bill from the company that sold me a printer", by="meaning"),
            "the frame found by meaning",
        )
        assert [hit.matched_by for hit in hits] == [("meaning",)]
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "meaning"]


def test_the_projector_thread_runs_housekeeping_past_the_retention(store: MemoryStore) -> None:
    recorder = Recorder(store)
    config = store.config.replace(retention_days=30)
    recorder.record(seen("an old screen", days_ago=40), config)
    recorder.record(seen("a new screen"), config)
    stop = threading.Event()
    thread = run_in_thread(ProjectorThread(store, lambda: config, stop, 0.1))
    try:
        deleted = wait_for(
            lambda: [e for _, e in store.log.read() if isinstance(e, FramesDeleted)],
            "the retention pass",
        )
        wait_for(lambda: len(frames(store)) == 1, "the old frame purged from the log")
    finally:
        stop.set()
        thread.join(30)
    assert [d.reason for d in deleted] == ["retention"]
    assert [f.text for f in frames(store)] == ["a new screen"]
    assert store.state().totals().frames == 1


def test_a_removed_heartbeat_file_is_made_again_at_the_next_beat(store: MemoryStore) -> None:
    heartbeat = HeartbeatFile(store.home)
    (store.home / "daemon.json").unlink()
    heartbeat.write(Heartbeat(pid=4242, last_tick_us=now_us()))
    beat = read_heartbeat(store.home)
    assert beat is not None and beat.pid == 4242
    assert (store.home / "daemon.json").stat().st_mode & 0o777 == 0o600


def test_the_pause_hotkey_says_why_it_cannot_listen_and_gives_the_thread_hook_back() -> None:
    before = threading.excepthook
    hotkey = PauseHotkey(lambda: None)
    try:
        assert threading.excepthook == hotkey._thread_failed
        wayland = "Wayland gives programs no global key grab"
        hotkey.follow(Config(pause_hotkey="<ctrl>+<shift>+p"), wayland)
        assert hotkey.problem == wayland
        hotkey.follow(Config(pause_hotkey=""), wayland)
        assert hotkey.problem is None
    finally:
        hotkey.close()
    assert threading.excepthook is before


def test_without_an_accessibility_bus_nothing_is_announced_nor_withdrawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    announcement = Announcement()
    announcement.follow(Config(announce_accessibility=True))
    assert announcement.announced is False
    announcement.follow(Config(announce_accessibility=False))
    assert announcement.announced is False
