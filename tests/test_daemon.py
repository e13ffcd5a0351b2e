"""The real capture daemon against the real headless desktop (Xvfb, openbox, AT-SPI, OCR)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path

import pytest

from backscroll.daemon import RETRY_SECONDS
from backscroll.manage import pause
from backscroll.store import MemoryStore
from headless import wait_for
from tests.desktop import Desktop, headless_desktop
from tests.helpers import (
    FAST,
    SECRET_LINES,
    DaemonProcess,
    assert_the_secret_was_stored_redacted,
    quiet,
)
from tests.residue import files_containing

pytestmark = pytest.mark.desktop


class Daemon(DaemonProcess):
    def start(self) -> None:
        # A GTK window takes the focus a moment after it maps: let the desktop settle first,
        # or it steals the activation a test makes next.
        time.sleep(1.0)
        super().start()


def debug(daemon: Daemon) -> str:
    return json.dumps(daemon.status()["daemon"]) + repr([(f.id, f.app) for f in daemon.frames()])


@pytest.fixture
def daemon_kind() -> type[Daemon]:
    return Daemon


def test_switching_windows_records_ocr_and_accessibility_text(
    desktop: Desktop, daemon: Daemon
) -> None:
    term = desktop.open_xterm(["db: connect ECONNREFUSED 127.0.0.1:5432"], "server log")
    gtk = desktop.open_zenity_text(
        "The quarterly invoice INV-77120 from Acme Corporation is due in December.", "Invoice"
    )
    daemon.start()
    desktop.activate(term.window_id)
    wait_for(lambda: any(f.app == "XTerm" for f in daemon.frames()), "the terminal's frame")
    desktop.activate(gtk.window_id)
    wait_for(lambda: daemon.frames()[-1].app == "Zenity", "the invoice's frame")
    frames = daemon.frames()
    assert {f.reason for f in frames[1:]} == {"app_change"}
    with MemoryStore(daemon.home) as store:
        (hit,) = store.search("econnrefused")
        assert (hit.app, hit.text_source) == ("XTerm", "ocr")
        assert {h.text_source for h in store.search("quarterly invoice")} == {"ax"}
    status = daemon.status()["daemon"]
    assert status["state"] == "running"
    assert status["last_capture_us"] >= status["started_us"]  # what status shows as captured
    daemon.stop()
    logged = daemon.log.read_text()
    for seen in ("ECONNREFUSED", "quarterly", "server log", "Invoice"):
        assert seen not in logged, "the daemon's log holds screen text or a title"


def test_a_switch_between_two_windows_with_the_same_app_and_title_is_captured(
    desktop: Desktop, daemon: Daemon
) -> None:
    first = desktop.open_xterm(["marmoset deployment finished"] * 8, "bash")
    second = desktop.open_xterm(["quetzal migration failed"] * 8, "bash")
    desktop.activate(first.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first window's frame")
    desktop.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 2, "the second window's frame")
    assert daemon.frames()[-1].reason == "title_change"
    with MemoryStore(daemon.home) as store:
        assert [h.id for h in store.search("quetzal")] == [daemon.frames()[-1].id]
    # Back to the first window: the spec's "unless the screen is identical to the last
    # frame" compares with the frame just taken (the second window's), so it is taken again.
    desktop.activate(first.window_id)
    wait_for(lambda: len(daemon.frames()) == 3, "the first window's frame again")
    assert len(quiet(daemon)) == 3


def test_a_counter_in_the_title_is_ignored_but_new_words_are_captured(
    desktop: Desktop, daemon: Daemon
) -> None:
    term = desktop.open_xterm(["build output"], "Build (1) done 10%")
    desktop.activate(term.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    desktop.set_title(term.window_id, "Build (2) done 45%")
    assert len(quiet(daemon)) == 1
    desktop.set_title(term.window_id, "Deploy started")
    wait_for(lambda: len(daemon.frames()) == 2, "the retitled frame")
    assert daemon.frames()[-1].reason == "title_change"


def test_a_denied_window_is_never_captured_and_is_blacked_out_beside_another(
    desktop: Desktop, daemon: Daemon
) -> None:
    vault = desktop.open_xterm(["vaultsecretword"] * 30, "KeePassXC - vault", columns=60)
    daemon.start()
    desktop.activate(vault.window_id)
    frames = quiet(daemon, 2.5)
    assert all("KeePassXC" not in f.title for f in frames)
    assert daemon.status()["daemon"]["last_outcome"] == "denied"
    other = desktop.open_zenity_text("An ordinary document about gardening.", "Garden notes")
    desktop.activate(other.window_id)
    hit = wait_for(lambda: [f for f in daemon.frames() if f.app == "Zenity"], "a frame")[0]
    with MemoryStore(daemon.home) as store:
        jpeg = store.thumbnail(hit)
    assert jpeg is not None
    from PIL import Image

    from capture.probe import X11Probe

    probe = X11Probe(desktop.display)
    try:
        rect = next(w.geometry for w in probe.visible_windows() if w.window_id == vault.window_id)
    finally:
        probe.close()
    image = Image.open(BytesIO(jpeg)).convert("L")
    scale = image.width / 1920
    box = (
        int(rect.x * scale) + 2,
        int(rect.y * scale) + 2,
        int((rect.x + rect.width) * scale) - 2,
        int((rect.y + rect.height) * scale) - 2,
    )
    region = image.crop(box)
    assert region.getextrema()[1] < 40, "the denied window's pixels reached the thumbnail"
    assert files_containing(daemon.home, "vaultsecretword") == []


def test_pause_timed_pause_resume_and_the_hotkey(desktop: Desktop, daemon: Daemon) -> None:
    first = desktop.open_xterm(["first window"], "first")
    second = desktop.open_xterm(["second window"], "second")
    desktop.activate(first.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    daemon.cli("pause")
    wait_for(lambda: daemon.status()["daemon"]["last_outcome"] == "paused", "the pause")
    desktop.activate(second.window_id)
    assert len(quiet(daemon)) == 1
    daemon.cli("resume")
    wait_for(lambda: len(daemon.frames()) == 2, "capture after resume")

    with MemoryStore(daemon.home, write=True) as store:
        pause(store, datetime.now(UTC) + timedelta(seconds=2))
    wait_for(lambda: daemon.status()["daemon"]["last_outcome"] == "paused", "the timed pause")
    desktop.activate(first.window_id)
    wait_for(lambda: len(daemon.frames()) == 3, "capture once the timed pause ends")

    desktop.run(["xdotool", "key", "ctrl+shift+alt+p"])
    wait_for(lambda: daemon.status()["capture"].startswith("paused"), "the hotkey's pause")
    desktop.run(["xdotool", "key", "ctrl+shift+alt+p"])
    wait_for(lambda: daemon.status()["capture"] == "active", "the hotkey's resume")

    # A new hotkey reaches the running daemon at its next tick; the old one stops working.
    daemon.cli("config", "--hotkey", "<ctrl>+<alt>+k")
    time.sleep(2)  # a few ticks
    desktop.run(["xdotool", "key", "ctrl+shift+alt+p"])
    time.sleep(1)
    assert daemon.status()["capture"] == "active"
    desktop.run(["xdotool", "key", "ctrl+alt+k"])
    wait_for(lambda: daemon.status()["capture"].startswith("paused"), "the new hotkey's pause")
    daemon.cli("config", "--hotkey", "")
    daemon.cli("resume")
    time.sleep(2)
    desktop.run(["xdotool", "key", "ctrl+alt+k"])
    time.sleep(1)
    assert daemon.status()["capture"] == "active"


def test_a_secret_on_screen_is_stored_redacted_and_encrypted_text_is_unreadable(
    desktop: Desktop, daemon: Daemon
) -> None:
    daemon.cli("config", "--encrypt-text", "on")
    term = desktop.open_xterm(SECRET_LINES, "shell")
    desktop.activate(term.window_id)
    daemon.start()
    assert_the_secret_was_stored_redacted(daemon)


def test_a_full_disk_pauses_capture_with_the_reason_and_it_resumes(
    desktop: Desktop, tmp_path: Path
) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], check=True)
    try:
        daemon = Daemon.of(desktop.daemon_env, mount / "home")
        daemon.cli(*FAST)
        term = desktop.open_xterm(["before the disk filled up"], "one")
        other = desktop.open_xterm(["while the disk is full"], "two")
        desktop.activate(term.window_id)
        daemon.start()
        wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
        filler = mount / "filler"
        with open(filler, "wb") as f, pytest.raises(OSError):
            f.write(b"\0" * 4_000_000)
        desktop.activate(other.window_id)
        wait_for(lambda: daemon.status()["daemon"].get("problem") == "disk full", "disk full")
        assert daemon.status()["daemon"]["last_outcome"] in ("error", "paused")
        filler.unlink()
        # No new switch: the frame that could not be stored is taken again by itself.
        wait_for(lambda: len(daemon.frames()) >= 2, "capture after space returned", 40)
        assert daemon.status()["daemon"].get("problem") is None
        daemon.stop()
        assert daemon.cli("verify").strip().endswith("healthy")
    finally:
        daemon.close()
        desktop.close()
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_killed_daemon_restarts_consistent_and_the_gap_shows_as_a_crash(
    desktop: Desktop, daemon: Daemon
) -> None:
    windows = [desktop.open_xterm([f"window number {i}"], f"w{i}") for i in range(3)]
    daemon.start()
    for window in windows:
        desktop.activate(window.window_id)
        time.sleep(0.3)
    daemon.stop(signal.SIGKILL)
    assert daemon.cli("verify").strip().endswith("healthy")
    before = len(daemon.frames())
    daemon.start()
    desktop.activate(windows[0].window_id)
    wait_for(lambda: len(daemon.frames()) > before, "capture after the restart")
    assert "crashed" in daemon.cli("log", "--kind", "dstart")


def test_ocr_failing_on_a_frame_costs_only_that_frame_s_text(
    desktop: Desktop, daemon: Daemon, tmp_path: Path
) -> None:
    # The fallback engine (tesserocr made unimportable for the daemon and its OCR worker),
    # with a tesseract that starts and lists its languages, then fails on every image.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tesserocr.py").write_text("raise ImportError('no wheel for this platform')\n")
    daemon.env["PYTHONPATH"] = str(shadow)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "tesseract"
    real = subprocess.run(["which", "tesseract"], capture_output=True, text=True).stdout.strip()
    fake.write_text(
        f'#!/bin/sh\ncase "$1" in --list-langs|--version) exec {real} "$@";; esac\n'
        'echo "simulated failure" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    daemon.env["PATH"] = f"{bin_dir}:{daemon.env['PATH']}"
    first = desktop.open_xterm(["text only OCR could read"], "first")
    second = desktop.open_xterm(["more of it"], "second")
    desktop.activate(first.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    desktop.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 2, "capture going on after OCR failed")
    assert {f.text_source for f in daemon.frames()} == {"none"}
    assert "tesserocr cannot be imported (no wheel for this platform); using pytesseract" in (
        daemon.log.read_text()
    )
    assert "OCR failed on one frame" in daemon.log.read_text()


def ocr_workers(parent: int) -> list[int]:
    """The OCR worker processes ``parent`` started."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == parent and b"capture.ocr_worker" in command:
            found.append(int(stat.parent.name))
    return found


def test_a_deletion_ends_the_ocr_worker_that_knew_the_deleted_lines(
    desktop: Desktop, daemon: Daemon
) -> None:
    first = desktop.open_xterm(["a line that will be deleted"], "first")
    second = desktop.open_xterm(["a line captured after the deletion"], "second")
    desktop.activate(first.window_id)
    daemon.start()
    assert daemon.process is not None
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    [before] = ocr_workers(daemon.process.pid)

    daemon.cli("clear", "-y")
    wait_for(lambda: not daemon.frames(), "the deletion carried out")
    desktop.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 1, "a frame after the deletion")

    assert before not in ocr_workers(daemon.process.pid)
    assert ocr_workers(daemon.process.pid), "a new worker read the frame after it"


def test_a_deletion_while_capture_is_paused_ends_the_ocr_worker_at_once(
    desktop: Desktop, daemon: Daemon
) -> None:
    # Issue 24, also worth a look: the worker was ended only before the next frame's OCR,
    # so while capture was paused it kept the deleted lines.
    window = desktop.open_xterm(["a line that will be deleted while paused"], "first")
    desktop.activate(window.window_id)
    daemon.start()
    assert daemon.process is not None
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    [before] = ocr_workers(daemon.process.pid)
    daemon.cli("pause")
    daemon.cli("clear", "-y")
    wait_for(lambda: before not in ocr_workers(daemon.process.pid), "the worker ended")
    assert daemon.status()["daemon"]["last_outcome"] == "paused"


def unread(pid: int) -> int:
    """Bytes written to process ``pid``'s standard input (a pipe) that it has not read."""
    fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, bytes(4)), sys.byteorder)
    finally:
        os.close(fd)


def test_a_frame_being_read_while_clear_runs_is_never_searchable_after_it(
    desktop: Desktop, daemon: Daemon
) -> None:
    # Issue 24, case 2: the frame the worker was reading (OCR, slowed here for real by
    # stopping the OCR worker) was appended after the clear's tombstone and stayed.
    first = desktop.open_xterm(["the first window"], "first")
    second = desktop.open_xterm(["zygomorphic words being read"] * 8, "second")
    desktop.activate(first.window_id)
    daemon.start()
    assert daemon.process is not None
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    [worker] = ocr_workers(daemon.process.pid)
    os.kill(worker, signal.SIGSTOP)
    try:
        desktop.activate(second.window_id)
        # Not the status's "working": it is said before the picture is taken, and a clear
        # that lands before then is rightly followed by a frame of the screen after it.
        wait_for(lambda: unread(worker) > 0, "the second frame sent to the stopped worker")
        daemon.cli("clear", "-y")
    finally:
        os.kill(worker, signal.SIGCONT)
    wait_for(lambda: "): deleted" in daemon.log.read_text(), "the frame read and dropped")
    assert daemon.frames() == []
    with MemoryStore(daemon.home) as store:
        assert store.search("zygomorphic") == []
    daemon.stop()
    assert not files_containing(daemon.home, "zygomorphic")


def test_deletion_and_reindex_requested_while_the_daemon_runs_are_carried_out_by_it(
    desktop: Desktop, daemon: Daemon
) -> None:
    first = desktop.open_xterm(["keep this window"], "keeper")
    second = desktop.open_xterm(["forget this window"], "forgettable")
    desktop.activate(first.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    desktop.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 2, "the second frame")
    assert "deleted 1 frame(s)" in daemon.cli("clear", "--app", "forgettable", "-y")
    assert [f.title for f in daemon.frames()] == ["keeper"]
    assert "views rebuilt" in daemon.cli("reindex", "--views-only")
    assert "reindexed" in daemon.cli("reindex", "-y")
    assert [f.title for f in daemon.frames()] == ["keeper"]
    assert daemon.status()["daemon"]["state"] == "running"


def test_a_hand_edit_of_config_json_is_taken_in_by_the_running_daemon(
    desktop: Desktop, daemon: Daemon
) -> None:
    from eventlog.events import ConfigChanged
    from eventlog.log import Log

    term = desktop.open_xterm(["some text"], "t")
    desktop.activate(term.window_id)
    daemon.start()
    path = daemon.home / "config.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "retention_days": 9}))

    def taken_in() -> bool:  # read the log directly: any other command would take it in too
        return any(
            isinstance(e, ConfigChanged) and e.origin == "file" and e.config["retention_days"] == 9
            for _, e in Log(daemon.home / "log").read()
        )

    wait_for(taken_in, "the daemon to take the edit in", 10)


def test_a_locked_keyring_pauses_capture_with_the_reason_and_stores_nothing(
    desktop: Desktop, daemon: Daemon, tmp_path: Path
) -> None:
    from tests.keyring_daemon import lock_collection

    desktop.start_keyring()
    folder = tmp_path / "keyring-client"
    for name, sub in (("HOME", ""), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        daemon.env[name] = str(folder / sub)
    daemon.env.pop("PYTHON_KEYRING_BACKEND", None)
    daemon.env["BACKSCROLL_KEYSTORE"] = "keyring"
    term = desktop.open_xterm(["text behind a locked keyring"], "locked")
    desktop.activate(term.window_id)
    lock_collection(desktop.bus_address)
    daemon.start()
    problem = wait_for(lambda: daemon.status()["daemon"].get("problem"), "the paused reason")
    assert "key" in problem.lower()
    assert daemon.status()["daemon"]["last_outcome"] in ("paused", "error")
    assert daemon.frames() == []  # never a fall-back to plaintext or to a new key


@contextlib.contextmanager
def recording_beside_its_own_display(
    home: Path, line: str, title: str
) -> Iterator[tuple[Desktop, Daemon]]:
    """A daemon that has recorded one frame of an xterm showing ``line``, on a desktop of
    its own: the session's X server must outlive the tests that stop theirs."""
    with headless_desktop() as desk:
        daemon = Daemon.of(desk.daemon_env, home)
        try:
            daemon.cli(*FAST)
            window = desk.open_xterm([line], title)
            desk.activate(window.window_id)
            daemon.start()
            wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
            yield desk, daemon
        finally:
            daemon.close()


def test_a_display_that_goes_away_pauses_capture_and_it_resumes_when_it_comes_back(
    backscroll_home: Path,
) -> None:
    with recording_beside_its_own_display(
        backscroll_home, "before the display went away", "before"
    ) as (desk, daemon):
        desk.stop_x_server()
        problem = wait_for(lambda: daemon.status()["daemon"].get("problem"), "the reason")
        assert problem.startswith("display unavailable")
        status = daemon.status()["daemon"]
        assert (status["state"], status["last_outcome"]) == ("running", "paused")
        assert daemon.process is not None and daemon.process.poll() is None
        assert daemon.cli("verify").strip().endswith("healthy")
        # Kept away past a reconnection attempt, which fails and is made again later.
        wait_for(
            lambda: "cannot open" in (daemon.status()["daemon"].get("problem") or ""),
            "a failed reconnection",
            RETRY_SECONDS + 5,
        )
        assert daemon.status()["daemon"]["hotkey_problem"] == "the display went away"

        desk.restart_x_server()
        after = desk.open_xterm(["after the display came back"], "after")
        desk.activate(after.window_id)
        wait_for(lambda: daemon.frames()[-1].title == "after", "a frame of the new display")
        status = daemon.status()["daemon"]
        assert (status.get("problem"), status.get("hotkey_problem")) == (None, None)
        assert len(daemon.frames()) == 2
        # The pause hotkey listens on the new display too.
        desk.run(["xdotool", "key", "ctrl+shift+alt+p"])
        wait_for(lambda: daemon.status()["capture"].startswith("paused"), "the hotkey")
        daemon.stop()
        assert daemon.cli("verify").strip().endswith("healthy")
        logged = daemon.log.read_text()
        assert "capture paused: display unavailable" in logged
        assert "Traceback" not in logged


def test_windows_destroyed_under_the_probe_cost_nothing_and_capture_goes_on(
    desktop: Desktop, daemon: Daemon
) -> None:
    from Xlib import X, Xatom
    from Xlib import display as xdisplay

    steady = desktop.open_xterm(["a window that stays"], "steady")
    desktop.activate(steady.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    x = xdisplay.Display(desktop.display)
    try:
        root = x.screen().root
        # Windows that openbox maps, focuses and makes _NET_ACTIVE_WINDOW, destroyed 10 ms
        # later: now and then a poll asks about one that is already gone (1 poll in 20 in a
        # trial run), and captures fall due for windows that vanish during the grab.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            flicker = root.create_window(100, 100, 300, 200, 0, X.CopyFromParent)
            flicker.set_wm_class("flicker", "Flicker")
            flicker.set_wm_name("flicker")
            flicker.map()
            x.sync()
            time.sleep(0.01)
            flicker.destroy()
            x.sync()
        desktop.activate(steady.window_id)
        wait_for(lambda: daemon.frames()[-1].title == "steady", "the steady window again")
        # What the window manager's property holds between a window's destruction and its
        # update, made to last: every probe now gets BadWindow from the server.
        active = x.intern_atom("_NET_ACTIVE_WINDOW")
        root.change_property(active, Xatom.WINDOW, 32, [flicker.id])
        x.sync()
        wait_for(
            lambda: daemon.status()["daemon"]["last_outcome"] == "no window", "a vanished window"
        )
        time.sleep(1.0)  # five more polls on it
        status = daemon.status()["daemon"]
        assert (status["state"], status["last_outcome"], status.get("problem")) == (
            "running",
            "no window",
            None,
        )
    finally:
        x.close()
    later = desktop.open_xterm(["a window opened afterwards"], "later")
    desktop.activate(later.window_id)
    wait_for(lambda: daemon.frames()[-1].title == "later", "a frame after the X errors")
    assert daemon.process is not None and daemon.process.poll() is None
    daemon.stop()
    assert daemon.cli("verify").strip().endswith("healthy")
    assert "Traceback" not in daemon.log.read_text()


def test_a_stopped_daemon_leaves_the_views_caught_up_with_the_log(
    desktop: Desktop, daemon: Daemon
) -> None:
    window = desktop.open_xterm(["the last frame before the stop"], "last")
    daemon.start()
    desktop.activate(window.window_id)
    wait_for(lambda: daemon.frames(), "a frame")
    daemon.stop()
    with MemoryStore(daemon.home) as store:  # a reader: it catches nothing up itself
        assert store.lag == 0, store.behind_why


def test_removing_the_heartbeat_file_leaves_the_daemon_running_and_it_is_written_again(
    desktop: Desktop, daemon: Daemon
) -> None:
    # Issue 24, case 8: the heartbeat's rewrite opened daemon.json without O_CREAT, and the
    # FileNotFoundError ended the probe loop, logged as a normal stop.
    first = desktop.open_xterm(["before the heartbeat went"], "first")
    second = desktop.open_xterm(["after the heartbeat went"], "second")
    desktop.activate(first.window_id)
    daemon.start()
    wait_for(lambda: len(daemon.frames()) == 1, "the first frame")
    (daemon.home / "daemon.json").unlink()
    wait_for(lambda: (daemon.home / "daemon.json").exists(), "the heartbeat written again")
    desktop.activate(second.window_id)
    wait_for(lambda: len(daemon.frames()) == 2, "capture going on")
    assert daemon.process is not None and daemon.process.poll() is None
    assert daemon.status()["daemon"]["state"] == "running"
    daemon.stop()
    assert "capture daemon stopped (interrupted)" in daemon.log.read_text()


def test_a_second_daemon_is_refused_even_after_daemon_lock_was_removed(
    desktop: Desktop, daemon: Daemon
) -> None:
    # Issue 24, the class of case 8 (a file the daemon keeps, removed while it runs): a
    # removed daemon.lock let a second daemon take a new file's lock and capture beside it.
    daemon.start()

    def second_start() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "backscroll", "start"],
            env=daemon.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    refused = second_start()
    assert refused.returncode != 0 and "already running" in refused.stderr
    (daemon.home / "daemon.lock").unlink()
    wait_for(lambda: (daemon.home / "daemon.lock").exists(), "the lock taken again")
    refused = second_start()
    assert refused.returncode != 0 and "already running" in refused.stderr
    assert daemon.process is not None and daemon.process.poll() is None


def test_a_deletion_while_the_display_is_away_ends_the_ocr_worker_at_once(
    backscroll_home: Path,
) -> None:
    # The probe loop's reconnection attempts did not look at deletions: the OCR worker kept
    # the deleted lines for as long as the display stayed away.
    with recording_beside_its_own_display(
        backscroll_home, "a line deleted while the display is away", "away"
    ) as (desk, daemon):
        assert daemon.process is not None
        [before] = ocr_workers(daemon.process.pid)
        desk.stop_x_server()
        wait_for(lambda: daemon.status()["daemon"].get("problem"), "the display gone")
        daemon.cli("clear", "-y")
        wait_for(lambda: before not in ocr_workers(daemon.process.pid), "the worker ended")
        assert daemon.status()["daemon"]["problem"].startswith("display unavailable")


def locked_by_another(path: Path) -> bool:
    """Whether another open file description holds the flock of the file at ``path``."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a flock this took
    return False


def test_the_views_lock_removed_while_the_daemon_runs_is_taken_again(
    desktop: Desktop, daemon: Daemon
) -> None:
    # The class of case 8: with views/LOCK removed, a command that writes would lock a new
    # file and write the views beside the daemon's projector.
    daemon.start()
    lock = daemon.home / "views" / "LOCK"
    wait_for(lambda: locked_by_another(lock), "the projector's lock")
    lock.unlink()
    wait_for(lambda: locked_by_another(lock), "the lock taken again")
    assert daemon.process is not None and daemon.process.poll() is None
