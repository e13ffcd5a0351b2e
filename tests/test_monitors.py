"""Several monitors on X11: the real daemon on one 3840x1080 Xvfb screen cut into two RandR
monitors (``Desktop.set_monitors``, what ``xrandr --setmonitor`` does), as a person's two
side-by-side screens.

A frame shows the window's monitor; a window across both is captured whole: the frame is
the rectangle holding both monitors, so its text is read whole (``capture.screen.frame_for``).
"""

from __future__ import annotations

from collections.abc import Iterator
from io import BytesIO

import pytest
from PIL import Image

from backscroll.store import MemoryStore
from eventlog.events import FrameCaptured
from headless import wait_for
from tests.desktop import Desktop, headless_desktop
from tests.helpers import DaemonProcess

pytestmark = pytest.mark.desktop

LEFT = (0, 0, 1920, 1080)
RIGHT = (1920, 0, 1920, 1080)


@pytest.fixture(scope="module")
def wide() -> Iterator[Desktop]:
    with headless_desktop(size=(3840, 1080)) as desk:
        desk.set_monitors(LEFT, RIGHT)
        yield desk


@pytest.fixture
def rig(wide: Desktop) -> Desktop:
    return wide


@pytest.fixture(autouse=True)
def two_monitors(wide: Desktop) -> Iterator[None]:
    """The two monitors again after each test (torn down after ``desk``, which closes the
    test's windows)."""
    yield
    wide.set_monitors(LEFT, RIGHT)


def captured(daemon: DaemonProcess) -> dict[str, FrameCaptured]:
    """The last frame event of each window title."""
    with MemoryStore(daemon.home) as store:
        return {e.title: e for _, e in store.log.read() if isinstance(e, FrameCaptured)}


def thumbnail_size(daemon: DaemonProcess, title: str) -> tuple[int, int]:
    """The size of the thumbnail of the window's last frame, once the views hold it."""
    hit = wait_for(lambda: [f for f in daemon.frames() if f.title == title], "the views")[-1]
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
    assert jpeg is not None
    return Image.open(BytesIO(jpeg)).size


def test_a_window_on_the_second_monitor_is_captured_from_that_monitor(
    wide: Desktop, daemon: DaemonProcess
) -> None:
    first = wide.open_xterm(["wombat burrow report"] * 4, "left", position=(40, 40))
    second = wide.open_xterm(["zanzibar ferry timetable"] * 4, "right", position=(2000, 40))
    wide.activate(first.window_id)
    daemon.start()
    wait_for(lambda: "left" in captured(daemon), "the first monitor's frame")
    wide.activate(second.window_id)
    frame = wait_for(lambda: captured(daemon).get("right"), "the second monitor's frame")

    assert frame.monitor == (2, *RIGHT)
    assert captured(daemon)["left"].monitor == (1, *LEFT)
    assert "zanzibar" in frame.text and "wombat" not in frame.text
    assert thumbnail_size(daemon, "right") == (480, 270)


def test_a_window_across_both_monitors_is_captured_whole(
    wide: Desktop, daemon: DaemonProcess
) -> None:
    # 120 columns of 9 px from x=1400: the first word on the left monitor, the last on the
    # right one, 1942 (the centre) just past the boundary.
    line = "kestrel" + " " * 85 + "pelican"
    across = wide.open_xterm([line] * 6, "across", position=(1400, 300))
    wide.activate(across.window_id)
    daemon.start()
    frame = wait_for(lambda: captured(daemon).get("across"), "the frame")

    assert frame.monitor == (0, 0, 0, 3840, 1080)
    assert "kestrel" in frame.text and "pelican" in frame.text
    assert thumbnail_size(daemon, "across") == (480, 135)


def test_monitors_removed_and_added_while_the_daemon_runs(
    wide: Desktop, daemon: DaemonProcess
) -> None:
    first = wide.open_xterm(["wombat burrow report"] * 4, "left", position=(40, 40))
    second = wide.open_xterm(["zanzibar ferry timetable"] * 4, "right", position=(2000, 40))
    # Opened before the daemon starts: a window's first frame must hold its text.
    third = wide.open_xterm(["quokka island ferry"] * 4, "third", position=(2000, 400))
    wide.activate(second.window_id)
    daemon.start()
    wait_for(lambda: "right" in captured(daemon), "the second monitor's frame")

    wide.set_monitors(LEFT)  # unplugged: openbox moves its windows onto the first
    wide.activate(first.window_id)
    assert wait_for(lambda: captured(daemon).get("left"), "a frame").monitor == (1, *LEFT)
    wide.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 3, "a frame of the moved window")
    assert captured(daemon)["right"].monitor[0] == 1

    smaller = (1920, 0, 1280, 1024)
    wide.set_monitors(LEFT, smaller)  # another monitor plugged in, a window moved onto it
    wide.run(["xdotool", "windowmove", str(third.window_id), "2000", "40"])
    wide.activate(third.window_id)
    frame = wait_for(lambda: captured(daemon).get("third"), "the new monitor's frame")
    assert frame.monitor == (2, *smaller)
    assert "quokka" in frame.text
    assert thumbnail_size(daemon, "third") == (480, 384)
    status = daemon.status()["daemon"]
    assert (status["state"], status.get("problem")) == ("running", None)
    assert "Traceback" not in daemon.log.read_text()
