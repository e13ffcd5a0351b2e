"""``Camera.take``, capture's one call from "this window is in front" to what was seen, and
the daemon's capture loop around it, on the real headless desktop (Xvfb, openbox, AT-SPI,
Tesseract)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.capture_loop import CaptureLoop
from backscroll.record import Recorder
from backscroll.store import MemoryStore
from base.clock import now_us
from base.config import Config
from capture.camera import Camera
from capture.probe import Frontmost
from capture.seen import Seen
from eventlog.events import FRAME_TYPE, CapturePaused, FrameCaptured
from headless import wait_for
from tests.desktop import Desktop

pytestmark = pytest.mark.desktop

PROSE = (
    "The greenhouse tomatoes ripened early this year. Water them every second morning and "
    "keep the vents open on warm afternoons so the leaves stay dry."
)


def in_front(desk: Desktop, camera: Camera, window_id: int) -> Frontmost:
    desk.activate(window_id)
    desk.settle()
    front = camera.frontmost()
    assert front is not None and front.window_id == window_id
    return front


def test_a_frame_is_taken_in_one_call_with_its_text_pixels_thumbnail_and_signature(
    desk: Desktop, camera: Camera
) -> None:
    notes = desk.open_zenity_text(PROSE, "Garden notes")
    front = in_front(desk, camera, notes.window_id)
    seen = camera.take(front, "app_change", Config())
    assert isinstance(seen, Seen)
    assert (seen.app, seen.title, seen.text_source) == ("Zenity", "Garden notes", "ax")
    assert "greenhouse tomatoes" in seen.text
    assert seen.image is not None and seen.image.size == (1920, 1080)
    assert seen.jpeg is not None and seen.jpeg[:2] == b"\xff\xd8"
    assert len(seen.signature) == 32 * 18
    assert seen.likeness is not None and seen.likeness.window_id == notes.window_id
    assert seen.monitor == (1, 0, 0, 1920, 1080)


def test_the_same_screen_again_is_a_duplicate_unless_the_window_was_switched_to(
    desk: Desktop, camera: Camera
) -> None:
    notes = desk.open_zenity_text(PROSE, "Garden notes")
    front = in_front(desk, camera, notes.window_id)
    first = camera.take(front, "app_change", Config())
    assert isinstance(first, Seen)
    assert camera.take(front, "interval", Config(), after=first.likeness) == "duplicate"
    assert isinstance(camera.take(front, "app_change", Config(), after=first.likeness), Seen)


def test_a_denied_window_is_never_taken_and_one_beside_is_black_in_the_pixels(
    desk: Desktop, camera: Camera
) -> None:
    vault = desk.open_xterm(["vaultsecretword"] * 30, "KeePassXC - vault", columns=60)
    front = in_front(desk, camera, vault.window_id)
    assert camera.take(front, "app_change", Config()) == "denied"
    notes = desk.open_zenity_text(PROSE, "Garden notes")
    front = in_front(desk, camera, notes.window_id)
    rect = next(
        w.geometry
        for w in camera.backends.probe.visible_windows()
        if w.window_id == vault.window_id
    )
    seen = camera.take(front, "app_change", Config())
    assert isinstance(seen, Seen) and seen.image is not None
    inside = seen.image.convert("L").crop(
        (rect.x, rect.y, rect.x + rect.width, rect.y + rect.height)
    )
    assert inside.getextrema() == (0, 0), "the denied window's pixels reached the frame"


def test_a_window_without_accessible_text_is_read_by_ocr(desk: Desktop, camera: Camera) -> None:
    notes = desk.open_zenity_text(PROSE, "Garden notes", accessible=False)
    front = in_front(desk, camera, notes.window_id)
    seen = camera.take(front, "app_change", Config())
    assert isinstance(seen, Seen) and seen.text_source == "ocr"
    assert "greenhouse" in seen.text


@pytest.fixture
def store(backscroll_home: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore(backscroll_home, write=True, catch_up=False)
    yield opened
    opened.close()


def test_the_capture_loop_schedules_the_window_in_front_and_its_worker_records_it(
    desk: Desktop, camera: Camera, store: MemoryStore
) -> None:
    notes = desk.open_zenity_text(PROSE, "Garden notes")
    in_front(desk, camera, notes.window_id)
    stop = threading.Event()
    loop = CaptureLoop(store, camera, Recorder(store), stop, 0.1)
    worker = threading.Thread(target=loop.work, name="capture-worker")
    worker.start()
    try:
        loop.tick(store.config)
        wait_for(lambda: loop.outcome == "captured", "the frame taken and recorded")
        loop.tick(store.config)
        assert loop.outcome == "unchanged"
    finally:
        stop.set()
        loop.wake()
        worker.join(30)
    assert not worker.is_alive()
    stored = [e for _, e in store.log.read(types={FRAME_TYPE}) if isinstance(e, FrameCaptured)]
    assert [frame.title for frame in stored] == ["Garden notes"]


def test_the_capture_loop_takes_nothing_while_paused_or_of_a_denied_window(
    desk: Desktop, camera: Camera, store: MemoryStore
) -> None:
    vault = desk.open_xterm(["vaultsecretword"], "KeePassXC - vault", columns=60)
    in_front(desk, camera, vault.window_id)
    loop = CaptureLoop(store, camera, Recorder(store), threading.Event(), 0.1)
    loop.tick(store.config)
    assert loop.outcome == "denied"
    store.append(CapturePaused(ts_us=now_us(), origin="cli"))
    loop.tick(store.config)
    assert loop.outcome == "paused"
    assert list(store.log.read(types={FRAME_TYPE})) == []
