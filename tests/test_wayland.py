"""The real capture daemon on a real headless sway (wlroots backend), windows run by another
user, as on a person's Wayland desktop (headless/sway.py).

Skipped, saying what to install, where sway, foot or wtype are missing; on CI (``CI`` set)
a missing package fails instead, as ``make install`` installs them.
"""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from backscroll.daemon import RETRY_SECONDS
from backscroll.store import MemoryStore
from headless import wait_for
from headless.sway import SwayDesktop, missing_packages, sway_desktop
from tests.helpers import (
    FAST,
    SECRET_LINES,
    DaemonProcess,
    assert_the_secret_was_stored_redacted,
    needs,
    quiet,
)
from tests.residue import files_containing

pytestmark = [pytest.mark.sway, needs(missing_packages(), "sway")]


def test_ocr_and_accessibility_text_and_status_names_the_wayland_backend(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    term = sway.open_foot(["db: connect ECONNREFUSED 127.0.0.1:5432"] * 3, "server log")
    gtk = sway.open_zenity_text(
        "The quarterly invoice INV-77120 from Acme Corporation is due in December.", "Invoice"
    )
    sway.focus(term)
    daemon.start()
    wait_for(lambda: any(f.app == "foot" for f in daemon.frames()), "the terminal's frame")
    sway.focus(gtk)
    wait_for(lambda: daemon.frames()[-1].app == "zenity", "the invoice's frame")
    with MemoryStore(daemon.home) as store:
        (hit,) = store.search("econnrefused")
        assert (hit.app, hit.title, hit.text_source) == ("foot", "server log", "ocr")
        assert {h.text_source for h in store.search("quarterly invoice")} == {"ax"}
    status = daemon.status()
    assert status["backend"] == "wlroots"
    assert any("wlr-screencopy" in line for line in status["abilities"])
    assert "no global key grab" in status["daemon"]["hotkey_problem"]
    shown = daemon.cli("status")
    assert "desktop:   wlroots" in shown and "backscroll pause --toggle" in shown
    # The compositor's key binding runs this: it pauses, then resumes.
    daemon.cli("pause", "--toggle")
    wait_for(lambda: daemon.status()["daemon"]["last_outcome"] == "paused", "the pause")
    assert daemon.cli("pause", "--toggle").strip() == "capture resumed"


def test_a_switch_between_two_windows_with_the_same_app_and_title_is_captured(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    first = sway.open_foot(["marmoset deployment finished"] * 8, "bash")
    second = sway.open_foot(["quetzal migration failed"] * 8, "bash")
    sway.focus(first)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first window's frame")
    sway.focus(second)
    wait_for(lambda: len(daemon.frames()) == 2, "the second window's frame")
    assert daemon.frames()[-1].reason == "title_change"
    with MemoryStore(daemon.home) as store:
        assert [h.id for h in store.search("quetzal")] == [daemon.frames()[-1].id]
    # Unchanged: nothing more (dedupe and the trigger), however long it stays.
    assert len(quiet(daemon)) == 2


def test_a_denied_window_is_never_captured_and_is_blacked_out_beside_another(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    vault = sway.open_foot(["vaultsecretword"] * 30, "KeePassXC - vault")
    sway.focus(vault)
    daemon.start()
    frames = quiet(daemon, 2.5)
    assert all("KeePassXC" not in f.title for f in frames)
    assert daemon.status()["daemon"]["last_outcome"] == "denied"
    other = sway.open_zenity_text("An ordinary document about gardening.", "Garden notes")
    sway.focus(other)
    hit = wait_for(lambda: [f for f in daemon.frames() if f.app == "zenity"], "a frame")[0]
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
    assert jpeg is not None
    from PIL import Image

    rect = next(v["rect"] for v in sway.views() if v["id"] == vault.window_id)
    image = Image.open(BytesIO(jpeg)).convert("L")
    scale = image.width / 1920
    box = (
        int(rect["x"] * scale) + 2,
        int(rect["y"] * scale) + 2,
        int((rect["x"] + rect["width"]) * scale) - 2,
        int((rect["y"] + rect["height"]) * scale) - 2,
    )
    # foot paints white: only the black-out makes the denied window's half dark.
    assert image.crop(box).getextrema()[1] < 40, "the denied window's pixels were kept"
    assert files_containing(daemon.home, "vaultsecretword") == []


def test_a_secret_on_screen_is_stored_redacted(sway: SwayDesktop, daemon: DaemonProcess) -> None:
    daemon.cli("config", "--encrypt-text", "on")
    term = sway.open_foot(SECRET_LINES, "shell")
    sway.focus(term)
    daemon.start()
    assert_the_secret_was_stored_redacted(daemon)


def test_a_window_closed_mid_capture_costs_nothing_and_capture_goes_on(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    keep = sway.open_foot(["a window that stays"] * 4, "stays")
    sway.focus(keep)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    for round_ in range(3):
        gone = sway.open_foot([f"short lived {round_}"] * 4, f"gone {round_}")
        sway.focus(gone)
        sway.close(gone)  # often while the worker grabs or reads it
    sway.focus(keep)
    sway.close()
    later = sway.open_foot(["the window after"] * 4, "after")
    sway.focus(later)
    wait_for(lambda: daemon.frames()[-1].title == "after", "a frame after the closes")
    assert daemon.status()["daemon"].get("problem") is None
    assert "Traceback" not in daemon.log.read_text()


def test_a_monitor_added_while_the_daemon_runs_and_a_window_on_it_is_grabbed_alone(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    from PIL import Image

    first = sway.open_foot(["on the first monitor"] * 4, "first")
    sway.focus(first)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    sway.swaymsg("create_output")
    second = next(o for o in _outputs(sway) if o != "HEADLESS-1")
    # 1280x1024: a thumbnail of this output alone has another shape than one of the first
    # output (16:9) or of both side by side.
    sway.swaymsg(f"output {second} mode 1280x1024 position 1920 0")
    sway.swaymsg(f"focus output {second}")
    other = sway.open_foot(["zanzibar on the second monitor"] * 4, "second")
    sway.focus(other)
    wait_for(lambda: len(daemon.frames()) == 2, "the second monitor's frame")
    # A window is captured as it maps, which on a loaded machine can be before foot drew
    # its text: away and back, for a frame of it drawn.
    sway.focus(first)
    wait_for(lambda: len(daemon.frames()) == 3, "the first window's frame again")
    sway.focus(other)
    hit = wait_for(lambda: daemon.frames()[3:], "the second monitor's frame again")[0]
    assert hit.title == "second"
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
        assert hit.id in [h.id for h in store.search("zanzibar")]
    assert jpeg is not None and Image.open(BytesIO(jpeg)).size == (480, 384)
    # sway 1.7 can neither unplug nor disable a headless output: it stays, unfocused.
    sway.swaymsg("focus output HEADLESS-1")


def test_a_scale_2_output_is_grabbed_at_its_pixels_and_thumbnailed_at_the_set_width(
    sway: SwayDesktop,
) -> None:
    from capture import screen
    from capture.backends import backends

    sway.swaymsg("focus output HEADLESS-1")
    term = sway.open_foot(["drawn at scale two"] * 4, "scaled")
    sway.swaymsg("output HEADLESS-1 scale 2")
    try:
        sway.focus(term)
        found = backends(environ=sway.daemon_env)
        try:
            front = found.probe.frontmost()
            assert front is not None
            image, monitor = found.screen.grab(front.geometry)
        finally:
            found.close()
        # What a person sees is 960x540 logical points drawn with 1920x1080 pixels.
        assert (monitor.width, monitor.height, monitor.scale) == (960, 540, 2.0)
        assert image.size == (1920, 1080)
        from PIL import Image

        assert Image.open(BytesIO(screen.thumbnail(image, 480))).size == (480, 270)
    finally:
        sway.swaymsg("output HEADLESS-1 scale 1")
        sway.close()


def _outputs(sway: SwayDesktop) -> list[str]:
    return [o["name"] for o in json.loads(sway.swaymsg("-t", "get_outputs", raw=True))]


def _second_output(sway: SwayDesktop) -> str:
    """A 1280x1024 output right of HEADLESS-1 (created unless an earlier test made it)."""
    if len(_outputs(sway)) == 1:
        sway.swaymsg("create_output")
    second = next(o for o in _outputs(sway) if o != "HEADLESS-1")
    sway.swaymsg(f"output {second} mode 1280x1024 position 1920 0")
    return second


def _captured(daemon: DaemonProcess) -> dict[str, Any]:
    """The last frame event of each window title."""
    from eventlog.events import FrameCaptured

    with MemoryStore(daemon.home) as store:
        return {e.title: e for _, e in store.log.read() if isinstance(e, FrameCaptured)}


def test_a_window_across_two_outputs_is_captured_whole(
    sway: SwayDesktop, daemon: DaemonProcess
) -> None:
    from PIL import Image

    _second_output(sway)
    sway.swaymsg("focus output HEADLESS-1")
    # 1100 px of foot from x=1400: the first word on HEADLESS-1, the last on the other.
    across = sway.open_foot(["kestrel" + " " * 85 + "pelican"] * 6, "across")
    sway.swaymsg(
        f"[con_id={across.window_id}] floating enable, resize set 1100 600, move position 1400 300"
    )
    sway.focus(across)
    daemon.start()
    frame = wait_for(lambda: _captured(daemon).get("across"), "the frame")
    # The rectangle holding both outputs, what neither shows (below the smaller) black.
    assert frame.monitor == (0, 0, 0, 3200, 1080)
    assert "kestrel" in frame.text and "pelican" in frame.text
    hit = wait_for(lambda: [f for f in daemon.frames() if f.title == "across"], "the views")[0]
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
    assert jpeg is not None
    image = Image.open(BytesIO(jpeg)).convert("L")
    assert image.size == (480, 162)
    assert image.crop((300, 156, 480, 162)).getextrema()[1] < 40


def test_a_window_across_outputs_of_scale_1_and_2_is_grabbed_at_the_finer_scale(
    sway: SwayDesktop,
) -> None:
    from PIL import Image

    from capture.backends import backends
    from capture.screen import Monitor

    second = _second_output(sway)
    sway.swaymsg(f"output {second} scale 2")  # 640x512 logical points, right of HEADLESS-1
    try:
        sway.swaymsg("focus output HEADLESS-1")
        term = sway.open_foot(["drawn at two scales"] * 4, "two scales")
        # Floating, it keeps its tiled size (1920x1080 points): from x=1400 it covers the
        # scale-2 output's 640 points.
        sway.swaymsg(f"[con_id={term.window_id}] floating enable, move position 1400 100")
        sway.focus(term)
        found = backends(environ=sway.daemon_env)

        def drawn() -> tuple[Image.Image, Monitor] | None:
            """A grab once sway has moved the window and foot has drawn it there."""
            front = found.probe.frontmost()
            if front is None or front.geometry[:2] != (1400, 100):
                return None
            image, monitor = found.screen.grab(front.geometry)
            # The window's part on the scale-2 output: foot's white, at that output's pixels.
            right = min(2550, front.geometry.x + front.geometry.width - 10)
            inside = image.crop((2 * 1930, 2 * 110, 2 * right, 2 * 500)).convert("L")
            return (image, monitor) if inside.getextrema()[0] > 200 else None

        try:
            grabbed = wait_for(drawn, "the window drawn across both outputs")
        finally:
            found.close()
        assert grabbed is not None
        image, monitor = grabbed
        assert (monitor.index, monitor.width, monitor.height, monitor.scale) == (0, 2560, 1080, 2)
        assert image.size == (5120, 2160)
        # Below the scale-2 output (512 points high) no output shows anything: black.
        below = image.crop((2 * 1930, 2 * 600, 2 * 2550, 2 * 1070)).convert("L")
        assert below.getextrema()[1] < 10
    finally:
        sway.swaymsg(f"output {second} scale 1")
        sway.close()


def test_an_output_unplugged_and_another_plugged_while_the_daemon_runs(
    backscroll_home: Path,
) -> None:
    # sway 1.7 cannot unplug a headless output (no ``output … unplug``; ``disable`` fails to
    # commit on the headless backend): this sway runs nested, its outputs windows of another.
    with sway_desktop(nested=True) as desk:
        daemon = DaemonProcess.of(desk.daemon_env, backscroll_home)
        try:
            daemon.cli(*FAST)
            desk.swaymsg("create_output")
            second = next(o for o in desk.outputs() if o != "WL-1")
            desk.swaymsg(f"output {second} mode 1280x1024 position 1920 0")
            # Opened before the daemon starts: a window's first frame must hold its text.
            here = desk.open_foot(["wombat on the first monitor"] * 4, "here")
            desk.swaymsg(f"focus output {second}")
            there = desk.open_foot(["zanzibar on the second monitor"] * 4, "there")
            desk.focus(there)
            daemon.start()
            frame = wait_for(lambda: _captured(daemon).get("there"), "the second output's frame")
            assert frame.monitor == (2, 1920, 0, 1280, 1024)

            desk.unplug(second)  # sway moves its windows onto WL-1
            desk.focus(here)
            assert wait_for(lambda: _captured(daemon).get("here"), "a frame").monitor[0] == 1
            desk.focus(there)
            wait_for(lambda: len(daemon.frames()) == 3, "the moved window's frame")
            assert _captured(daemon)["there"].monitor == (1, 0, 0, 1920, 1080)

            desk.swaymsg("create_output")  # another monitor plugged in, a window moved there
            third = next(o for o in desk.outputs() if o != "WL-1")
            desk.swaymsg(f"output {third} mode 1280x1024 position 1920 0")
            desk.swaymsg(f"[con_id={here.window_id}] move container to output {third}")
            desk.focus(here)
            wait_for(lambda: len(daemon.frames()) == 4, "the plugged output's frame")
            frame = _captured(daemon)["here"]
            assert frame.monitor == (2, 1920, 0, 1280, 1024) and "wombat" in frame.text
            status = daemon.status()["daemon"]
            assert (status["state"], status.get("problem")) == ("running", None)
            assert "Traceback" not in daemon.log.read_text()
        finally:
            daemon.close()


def test_the_compositor_going_away_pauses_capture_and_it_resumes_when_it_comes_back(
    backscroll_home: Path,
) -> None:
    with sway_desktop() as desk:
        daemon = DaemonProcess.of(desk.daemon_env, backscroll_home)
        try:
            daemon.cli(*FAST)
            before = desk.open_foot(["before the compositor went away"] * 3, "before")
            desk.focus(before)
            daemon.start()
            wait_for(lambda: len(daemon.frames()) == 1, "the first frame")

            desk.stop_compositor()
            problem = wait_for(lambda: daemon.status()["daemon"].get("problem"), "the reason")
            assert problem.startswith("display unavailable")
            assert daemon.status()["daemon"]["state"] == "running"
            wait_for(
                lambda: "cannot connect" in (daemon.status()["daemon"].get("problem") or ""),
                "a failed reconnection",
                RETRY_SECONDS + 5,
            )

            desk.start_compositor()
            after = desk.open_foot(["after the compositor came back"] * 3, "after")
            desk.focus(after)
            wait_for(lambda: daemon.frames()[-1].title == "after", "a frame after the restart")
            assert daemon.status()["daemon"].get("problem") is None
            daemon.stop()
            assert daemon.cli("verify").strip().endswith("healthy")
            assert "Traceback" not in daemon.log.read_text()
        finally:
            daemon.close()
