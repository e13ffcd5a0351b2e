"""The real capture daemon on a real headless GNOME Shell (the gnome backend), windows run by
another user, as on a person's GNOME desktop (headless/gnome.py).

Skipped, saying what to install, where GNOME Shell, PipeWire or GStreamer's PipeWire source
are missing; on CI (``CI`` set) a missing package fails instead, as ``make install``
installs them.
"""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest

from backscroll.daemon import RETRY_SECONDS
from backscroll.store import MemoryStore
from headless import wait_for
from headless.gnome import IMAGE_APP, GnomeDesktop, gnome_desktop, missing_packages
from tests.helpers import (
    FAST,
    SECRET_LINES,
    DaemonProcess,
    assert_the_secret_was_stored_redacted,
    needs,
    quiet,
)
from tests.residue import files_containing

pytestmark = [pytest.mark.gnome, needs(missing_packages(), "GNOME")]


def test_ocr_and_accessibility_text_and_status_names_the_gnome_backend(
    gnome: GnomeDesktop, daemon: DaemonProcess
) -> None:
    daemon.start()
    gnome.open_image_text(["db: connect ECONNREFUSED 127.0.0.1:5432"] * 3, "server log")
    wait_for(lambda: any(f.title == "server log" for f in daemon.frames()), "the image's frame")
    gnome.open_zenity_text(
        "The quarterly invoice INV-77120 from Acme Corporation is due in December.", "Invoice"
    )
    wait_for(lambda: daemon.frames()[-1].title == "Invoice", "the invoice's frame")
    with MemoryStore(daemon.home) as store:
        (hit,) = store.search("econnrefused")
        assert (hit.app, hit.title, hit.text_source) == (IMAGE_APP, "server log", "ocr")
        (hit,) = store.search("quarterly invoice")
        assert (hit.app, hit.text_source) == ("zenity", "ax")
    status = daemon.status()
    assert status["backend"] == "gnome"
    assert any("Mutter's screen cast" in line for line in status["abilities"])
    assert "no global key grab" in status["daemon"]["hotkey_problem"]
    assert "desktop:   gnome" in daemon.cli("status")


def test_a_switch_between_two_windows_with_the_same_app_and_title_is_captured(
    gnome: GnomeDesktop, daemon: DaemonProcess
) -> None:
    first = gnome.open_zenity_text("marmoset deployment finished " * 4, "bash")
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first window's frame")
    gnome.open_zenity_text("quetzal migration failed " * 4, "bash")
    wait_for(lambda: len(daemon.frames()) == 2, "the second window's frame")
    assert daemon.frames()[-1].reason == "title_change"
    gnome.focus(first)
    wait_for(lambda: len(daemon.frames()) == 3, "the first window's frame again")
    with MemoryStore(daemon.home) as store:
        assert [h.id for h in store.search("quetzal")] == [daemon.frames()[1].id]
    # Unchanged: nothing more (dedupe and the trigger), however long it stays.
    assert len(quiet(daemon)) == 3


def test_a_denied_window_is_never_captured_and_blacks_out_the_desktop_while_open(
    gnome: GnomeDesktop, daemon: DaemonProcess
) -> None:
    from PIL import Image

    gnome.open_zenity_text("vaultsecretword " * 10, "KeePassXC - vault")
    daemon.start()
    frames = quiet(daemon, 2.5)
    assert all("KeePassXC" not in f.title for f in frames)
    assert daemon.status()["daemon"]["last_outcome"] == "denied"
    gnome.open_zenity_text("An ordinary document about gardening and roses.", "Garden notes")
    hit = wait_for(lambda: [f for f in daemon.frames() if f.title == "Garden notes"], "a frame")[0]
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
        assert [h.id for h in store.search("gardening")] == [hit.id]  # AT-SPI text still
    assert jpeg is not None
    # Where the vault is on screen nobody tells: the whole frame is dark.
    assert Image.open(BytesIO(jpeg)).convert("L").getextrema()[1] < 40
    assert files_containing(daemon.home, "vaultsecretword") == []


def test_a_secret_on_screen_is_stored_redacted(gnome: GnomeDesktop, daemon: DaemonProcess) -> None:
    daemon.cli("config", "--encrypt-text", "on")
    daemon.start()
    gnome.open_zenity_text("\n".join(SECRET_LINES), "shell")
    assert_the_secret_was_stored_redacted(daemon)


def test_a_window_closed_mid_capture_costs_nothing_and_capture_goes_on(
    gnome: GnomeDesktop, daemon: DaemonProcess
) -> None:
    gnome.open_zenity_text("a window that stays " * 4, "stays")
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    for round_ in range(3):
        gone = gnome.open_zenity_text(f"short lived window number {round_} " * 4, f"gone {round_}")
        gnome.close(gone)  # often while the worker grabs or reads it
    gnome.close()
    gnome.open_zenity_text("the window after the others " * 4, "after")
    wait_for(lambda: daemon.frames()[-1].title == "after", "a frame after the closes")
    assert daemon.status()["daemon"].get("problem") is None
    assert "Traceback" not in daemon.log.read_text()


def test_the_shell_going_away_pauses_capture_and_it_resumes_when_it_comes_back(
    gnome: GnomeDesktop, daemon: DaemonProcess
) -> None:
    gnome.open_zenity_text("before the shell went away " * 3, "before")
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")

    gnome.stop_compositor()
    problem = wait_for(lambda: daemon.status()["daemon"].get("problem"), "the reason")
    assert problem.startswith("display unavailable")
    assert daemon.status()["daemon"]["state"] == "running"

    gnome.start_compositor()
    gnome.open_zenity_text("after the shell came back " * 3, "after")
    wait_for(
        lambda: daemon.frames()[-1].title == "after",
        "a frame after the restart",
        RETRY_SECONDS + 30,
    )
    assert daemon.status()["daemon"].get("problem") is None
    daemon.stop()
    assert daemon.cli("verify").strip().endswith("healthy")
    assert "Traceback" not in daemon.log.read_text()


def test_two_monitors_make_one_frame_of_the_whole_desktop(backscroll_home: Path) -> None:
    from PIL import Image

    with gnome_desktop(monitors=("1920x1080", "1280x1024")) as desk:
        daemon = DaemonProcess.of(desk.daemon_env, backscroll_home)
        try:
            daemon.cli(*FAST)
            daemon.start()
            desk.open_zenity_text("a wombat on the first monitor " * 3, "wombat")
            hit = wait_for(lambda: [f for f in daemon.frames() if f.title == "wombat"], "a frame")
            with MemoryStore(daemon.home) as store:
                jpeg = store.thumbnail(hit[0])
            assert jpeg is not None
            # Both monitors side by side (3200x1080, the second one shorter), thumbnailed at
            # the configured width.
            assert Image.open(BytesIO(jpeg)).size == (480, 162)
        finally:
            daemon.close()


def test_an_xwayland_window_is_read_through_x11_with_its_rectangle(backscroll_home: Path) -> None:
    with gnome_desktop(xwayland=True) as desk:
        daemon = DaemonProcess.of(desk.daemon_env, backscroll_home)
        try:
            daemon.cli(*FAST)
            daemon.start()
            desk.open_xterm(["tapir migration ECONNREFUSED"] * 3, "xterm log")
            hit = wait_for(
                lambda: [f for f in daemon.frames() if f.title == "xterm log"], "the xterm's frame"
            )[0]
            assert (hit.app, hit.text_source) == ("XTerm", "ocr")
            with MemoryStore(daemon.home) as store:
                assert [h.id for h in store.search("tapir migration")] == [hit.id]
            assert "XWayland windows from X11" in " ".join(daemon.status()["abilities"])
        finally:
            daemon.close()
