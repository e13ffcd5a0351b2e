"""The headless GNOME desktop the GNOME tests and benchmarks run on
(headless/gnome.py): it starts and leaves nothing, its windows become the active
frame on AT-SPI, Alt+Tab moves the focus, the image window's text is in its pixels only,
and gnome-shell can go away and come back.

Skipped, saying what to install, where gnome-shell, PipeWire or the GTK bindings are
missing; on CI (``CI`` set) a missing package fails instead, as ``make install`` installs
them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capture.ocr import ocr_text
from headless import marked_processes, wait_for
from headless.gnome import (
    ALT,
    IMAGE_APP,
    TAB,
    GnomeDesktop,
    gnome_desktop,
    missing_packages,
)
from tests.helpers import needs

pytestmark = [pytest.mark.gnome, needs(missing_packages(), "GNOME")]


def _commands(pids: list[int]) -> set[str]:
    names = set()
    for pid in pids:
        try:
            names.add(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return names


def test_the_desktop_starts_its_parts_and_stopping_leaves_no_process_or_folder() -> None:
    with gnome_desktop() as desk:
        token, root = desk.token, desk.root
        running = _commands(marked_processes(token))
        assert {"gnome-shell", "pipewire", "wireplumber", "dbus-daemon"} <= running
        assert Path(desk.daemon_env["WAYLAND_DISPLAY"]).is_socket()
        assert (Path(desk.daemon_env["XDG_RUNTIME_DIR"]) / "pipewire-0").is_socket()
        assert "DISPLAY" not in desk.daemon_env
    assert marked_processes(token) == []
    assert not root.exists()


def test_a_new_zenity_window_is_the_active_frame(desk: GnomeDesktop) -> None:
    desk.open_zenity_text("The quarterly invoice INV-77120 is due.", "Invoice")
    assert desk.active() == ("zenity", "Invoice")
    later = desk.open_zenity_text("Minutes of the meeting", "Minutes")
    assert desk.active() == ("zenity", "Minutes")
    desk.close(later)
    assert ("zenity", "Minutes") not in {(f.app, f.title) for f in desk.frames()}


def test_alt_tab_and_focus_move_the_active_frame_between_two_windows(desk: GnomeDesktop) -> None:
    first = desk.open_zenity_text("first", "First")
    second = desk.open_zenity_text("second", "Second")
    desk.press(ALT, TAB)
    wait_for(lambda: desk.active() == ("zenity", "First"), "Alt+Tab to the first window")
    desk.focus(second)
    assert desk.active() == ("zenity", "Second")
    desk.focus(first)
    assert desk.active() == ("zenity", "First")


def test_the_image_window_has_a_frame_and_its_text_shows_in_its_pixels(
    desk: GnomeDesktop,
) -> None:
    empty = desk.screenshot()
    desk.open_image_text(["db: connect ECONNREFUSED 127.0.0.1:5432"], "server log")
    assert desk.active() == (IMAGE_APP, "server log")
    desk.settle()
    shot = desk.screenshot()
    assert shot.size == (1920, 1080)
    assert shot.tobytes() != empty.tobytes()
    assert "ECONNREFUSED" in ocr_text(shot)


def test_the_compositor_goes_away_and_comes_back(desk: GnomeDesktop) -> None:
    desk.open_zenity_text("before", "Before")
    desk.stop_compositor()
    assert "gnome-shell" not in _commands(marked_processes(desk.token))
    assert not Path(desk.daemon_env["WAYLAND_DISPLAY"]).exists()
    assert [f.app for f in desk.frames()] == []  # AT-SPI stays, with nobody on it
    desk.start_compositor()
    desk.open_zenity_text("after", "After")
    assert desk.active() == ("zenity", "After")
    assert desk.screenshot().size == (1920, 1080)
