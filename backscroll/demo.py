"""``backscroll demo``: the real daemon recording a private headless desktop for a minute.

    report = run_demo(seconds=60, home=None, echo=print)

It starts the desktop of ``headless.x11`` (Xvfb, a private session bus, openbox, AT-SPI),
opens real windows on it (a terminal where a command failed, a GTK invoice, a build whose
title changes, a password manager that the deny list keeps out), runs ``backscroll start``
against it in a store of its own, switches between the windows over ``seconds``, then shows
``status``, the timeline and searches that find what was shown and nothing of the denied
window, and the commands to try next. The store stays (a new temporary folder unless
``home`` is given); the desktop and the daemon do not: nothing is left running.

The daemon is a child process (``python -m backscroll start``) rather than a thread: it
takes the desktop's DISPLAY and session bus from its own environment, never from this
process's (which may be the user's real session), and stops on SIGINT exactly as a user's
Ctrl-C stops it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from base.errors import CaptureError, UsageError
from base.home import is_default_home, resolve_home

if TYPE_CHECKING:
    from headless.x11 import Desktop, Window

__all__ = ["DemoReport", "run_demo"]

MIN_SECONDS = 5.0
# The first start imports Xlib, mss, pynput and opens the store: seconds on a slow machine.
DAEMON_START_TIMEOUT_S = 60.0
# The daemon's Ctrl-C path waits for the frame in hand (an OCR takes about 1 s here).
DAEMON_STOP_TIMEOUT_S = 30.0
# Fast enough that each window of a 15 s demo is captured: a switch is seen within 0.5 s and
# captures are at least 1 s apart (the defaults, 1 s and 2 s, suit a day, not a demo).
DEMO_CONFIG = {"poll_seconds": 0.5, "min_interval_seconds": 1.0}

ERROR_LINES = [
    "~/shop $ npm run migrate",
    "",
    "> shop@2.3.0 migrate",
    "> knex migrate:latest",
    "",
    "Error: connect ECONNREFUSED 127.0.0.1:5432",
    "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
    "psql: error: connection to server at 127.0.0.1, port 5432 failed: Connection refused",
    "    Is the server running on that host and accepting TCP/IP connections?",
    "npm ERR! code ELIFECYCLE",
    "npm ERR! shop@2.3.0 migrate: exit status 1",
    "~/shop $",
]
INVOICE_TEXT = """Northwind Traders Ltd.
Invoice INV-20417

Billed to: Acme Corporation, accounts payable
Consulting services for the warehouse migration, March: 1,240.00 EUR
Payment due within 30 days of the invoice date. Thank you for your business.
"""
BUILD_LINES = ["~/shop $ npm run deploy", "building the shop for staging", "bundling assets"]
BUILD_TITLES = ("Building shop 12%", "Deployed shop to staging")
# A made-up secret shown in the denied window: it must end up in no file of the store.
SECRET_WORD = "zephyrquokka"
VAULT_TITLE = "KeePassXC - Passwords"
VAULT_LINES = [
    "Group: Personal",
    "  Title:    Bank",
    "  Username: alex",
    f"  Password: {SECRET_WORD}",
] * 4

PYTHON_MODULES = {
    "mss": "capture",
    "Xlib": "capture",
    "dbus_fast": "capture",
    "PIL": "capture",
    "pytesseract": "ocr",
}
OCR_PACKAGES = {"tesseract": ("tesseract-ocr", "tesseract-ocr-eng")}


@dataclass
class DemoReport:
    """What the demo recorded, for callers and tests."""

    home: Path
    frames: int = 0
    found: dict[str, int] = field(default_factory=dict)  # query → matches
    denied_frames: int = 0  # frames whose title names the denied window
    files_with_secret: list[str] = field(default_factory=list)
    example_id: int | None = None  # a frame to `show`


@dataclass
class _Scene:
    say: str
    window: Window
    retitle: str | None = None  # a new title, set halfway through the scene


def run_demo(
    seconds: float = 60.0,
    home: str | os.PathLike[str] | None = None,
    echo: Callable[[str], object] = print,
) -> DemoReport:
    """Run the demo (see the module docstring); ``echo`` receives each line of output."""
    if seconds < MIN_SECONDS:
        raise UsageError(f"--seconds must be at least {MIN_SECONDS:g}")
    # The desktop rig is equipment outside the library: imported here, when a demo runs,
    # so that importing backscroll or its CLI never loads it.
    from headless import DesktopError
    from headless.x11 import headless_desktop, missing_packages

    check_requirements(missing_packages())
    store = _demo_home(home)

    echo(f"Backscroll demo: a private headless desktop, recorded into {store}")
    try:
        with _terminated_cleanly(), headless_desktop() as desk:
            echo(f"  desktop {desk.display} started (Xvfb, openbox, AT-SPI); opening windows…")
            scenes = _open_windows(desk)
            _prepare_store(store, echo)
            daemon = _start_daemon(desk, store)
            try:
                echo(f"  capture daemon running (pid {daemon.pid}); {seconds:g} s of switching:")
                _play(desk, scenes, seconds, echo)
                _wait_idle(store)
                echo("")
                echo(f"$ backscroll status --home {_q(store)}")
                echo(_status(store))
            finally:
                _stop_daemon(daemon)
    except DesktopError as error:
        raise CaptureError(f"the demo desktop did not start: {error}") from None
    echo("")
    echo("The daemon is stopped and the desktop is gone. What was recorded:")
    report = _show_results(store, echo)
    _next_steps(store, report.example_id, echo)
    return report


@contextlib.contextmanager
def _terminated_cleanly() -> Iterator[None]:
    """SIGTERM (a timeout, a closed session) unwinds like Ctrl-C, so the desktop and the
    daemon are stopped rather than left for the next run's sweep."""

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------------ before the run


def check_requirements(desktop_packages: list[str]) -> None:
    """``CaptureError`` naming every package to install, in one line, when any is missing
    (``desktop_packages``: those the demo's desktop lacks)."""
    packages = list(desktop_packages)
    for binary, names in OCR_PACKAGES.items():
        if shutil.which(binary) is None:
            packages += names
    if packages:
        raise CaptureError(
            "the demo needs programs that are not installed: "
            f"sudo apt-get install -y {' '.join(sorted(packages))}"
        )
    extras = sorted(
        {extra for name, extra in PYTHON_MODULES.items() if importlib.util.find_spec(name) is None}
    )
    if extras:
        raise CaptureError(
            f"the demo needs the capture libraries: pip install 'backscroll[{','.join(extras)}]'"
        )


def _demo_home(home: str | os.PathLike[str] | None) -> Path:
    if home is None:
        return Path(tempfile.mkdtemp(prefix="backscroll-demo-"))
    store = resolve_home(home)
    if is_default_home(store):
        raise UsageError(
            "the demo records a made-up desktop: give it a folder of its own with --home, "
            "not your real store"
        )
    return store


def _prepare_store(store: Path, echo: Callable[[str], object]) -> None:
    from backscroll.store import MemoryStore

    with MemoryStore(store, write=True) as memory:
        if memory.state().totals().frames == 0:
            memory.set_config(
                poll_seconds=DEMO_CONFIG["poll_seconds"],
                min_interval_seconds=DEMO_CONFIG["min_interval_seconds"],
            )
            echo(
                f"  demo settings: poll {DEMO_CONFIG['poll_seconds']:g} s, captures at least "
                f"{DEMO_CONFIG['min_interval_seconds']:g} s apart"
            )


def _open_windows(desk: Desktop) -> list[_Scene]:
    # The GTK window first: it takes the focus a moment after it maps, which must happen
    # before the daemon starts, not in the middle of a scene.
    invoice = desk.open_zenity_text(INVOICE_TEXT, "Invoice INV-20417 - Northwind Traders")
    terminal = desk.open_xterm(ERROR_LINES, "~/shop - npm run migrate", columns=100, rows=20)
    build = desk.open_xterm(BUILD_LINES, BUILD_TITLES[0], columns=80, rows=16)
    vault = desk.open_xterm(VAULT_LINES, VAULT_TITLE, columns=50, rows=18)
    # Spread out, so each thumbnail shows the others around the active window (and the
    # password manager blacked out wherever it is visible).
    desk.run(["xdotool", "windowmove", str(build.window_id), "520", "420"])
    desk.run(["xdotool", "windowmove", str(vault.window_id), "1380", "120"])
    return [
        _Scene("a terminal: `npm run migrate` fails with ECONNREFUSED 127.0.0.1:5432", terminal),
        _Scene("a GTK window (zenity) showing invoice INV-20417", invoice),
        _Scene(
            f"a build whose title changes: '{BUILD_TITLES[0]}' → '{BUILD_TITLES[1]}'",
            build,
            retitle=BUILD_TITLES[1],
        ),
        _Scene(f"a password manager, '{VAULT_TITLE}': on the deny list", vault),
        _Scene("back to the terminal", terminal),
    ]


# --------------------------------------------------------------------------- the daemon


def _start_daemon(desk: Desktop, store: Path) -> subprocess.Popen[bytes]:
    """``backscroll start`` on the desktop; returns once its heartbeat names it."""
    from backscroll.heartbeat import read_heartbeat

    # The same backscroll as this process, whether installed or run from a checkout.
    source = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (source, desk.env.get("PYTHONPATH", "")) if p)
    env = {**desk.env, "PYTHONPATH": path}
    argv = [sys.executable, "-m", "backscroll", "start", "--home", str(store)]
    argv += ["--log-file", str(store / "daemon.log")]
    errors = desk.root / "logs" / "daemon-stderr.log"
    with open(errors, "wb") as err:
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            cwd=desk.root,
            # A demo started in the background inherits SIGINT ignored, and so would the
            # daemon: then the Ctrl-C that stops it cleanly would do nothing.
            preexec_fn=_default_sigint,
        )
    deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
    while (beat := read_heartbeat(store)) is None or beat.pid != process.pid:
        if process.poll() is not None:
            detail = errors.read_text(errors="replace").strip().splitlines()
            raise CaptureError(
                f"the capture daemon exited ({process.returncode}): "
                + (detail[-1] if detail else "see " + str(store / "daemon.log"))
            )
        if time.monotonic() > deadline:
            _stop_daemon(process)
            raise CaptureError(f"the capture daemon did not start in {DAEMON_START_TIMEOUT_S:g} s")
        time.sleep(0.1)
    return process


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop_daemon(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a user stops it; SIGKILL if it has not stopped in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=DAEMON_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _play(
    desk: Desktop, scenes: list[_Scene], seconds: float, echo: Callable[[str], object]
) -> None:
    slot = seconds / len(scenes)
    started = time.monotonic()
    for i, scene in enumerate(scenes):
        echo(f"  {time.monotonic() - started:5.1f} s  {scene.say}")
        desk.activate(scene.window.window_id)
        _sleep_until(started + i * slot + (slot / 2 if scene.retitle else slot))
        if scene.retitle:
            desk.set_title(scene.window.window_id, scene.retitle)
            echo(f"  {time.monotonic() - started:5.1f} s  … retitled '{scene.retitle}'")
            _sleep_until(started + (i + 1) * slot)


def _sleep_until(when: float) -> None:
    time.sleep(max(0.0, when - time.monotonic()))


def _wait_idle(store: Path, timeout: float = 5.0) -> None:
    """Let the daemon finish the frame in hand (its OCR) before status and the stop."""
    from backscroll.heartbeat import read_heartbeat

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        beat = read_heartbeat(store)
        if beat is None or beat.last_outcome != "working":
            return
        time.sleep(0.1)


# ---------------------------------------------------------------------------- afterwards


def _status(store: Path) -> str:
    from backscroll.status import collect, render
    from backscroll.store import MemoryStore

    with MemoryStore(store) as memory:
        return render(collect(memory))


def _show_results(store: Path, echo: Callable[[str], object]) -> DemoReport:
    from backscroll.store import MemoryStore
    from query.render import search_text, timeline_text

    report = DemoReport(store)
    with MemoryStore(store) as memory:
        frames = memory.timeline(limit=1000)
        report.frames = len(frames)
        report.denied_frames = sum("keepassxc" in f.title.lower() for f in frames)
        echo(f"$ backscroll timeline --home {_q(store)}")
        echo(timeline_text(frames, None, None, None))
        for query in ("ECONNREFUSED", '"INV-20417"', "deployed staging", SECRET_WORD, "KeePassXC"):
            moments = memory.moments(query)
            report.found[query] = len(moments)
            if moments and report.example_id is None:
                report.example_id = moments[0].hit.id
            echo("")
            echo(f"$ backscroll search {_q(query)} --home {_q(store)}")
            echo(search_text(query, moments, None, None, None))
    report.files_with_secret = files_containing(store, SECRET_WORD)
    echo("")
    if report.denied_frames == 0 and not report.files_with_secret:
        echo(
            f"The password manager ('{VAULT_TITLE}') was never captured: no frame has its "
            f"title, and its password '{SECRET_WORD}' is in no file under {store} "
            "(raw bytes and the decompressed log)."
        )
    else:
        echo(
            f"WARNING: the denied window reached the store: {report.denied_frames} frame(s), "
            f"files: {', '.join(report.files_with_secret) or 'none'}"
        )
    return report


def files_containing(folder: Path, word: str) -> list[str]:
    """Files under ``folder`` whose bytes (or decompressed log records) hold ``word``."""
    from eventlog.format import SEALED_SUFFIX
    from eventlog.segment import read_sealed

    needle = word.encode()
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if needle in data or (
            path.name.endswith(SEALED_SUFFIX)
            and any(needle in record.payload for record in read_sealed(path))
        ):
            found.append(str(path))
    return found


def _next_steps(store: Path, frame_id: int | None, echo: Callable[[str], object]) -> None:
    h = _q(store)
    echo("")
    echo("Try next:")
    for command, why in (
        (f"backscroll search 'connection refused' --home {h}", "words the OCR read"),
        (f"backscroll search 'invoice*' --app Zenity --home {h}", "a prefix, one app"),
        (f"backscroll timeline --since 10m --home {h}", "what you saw, in order"),
        (f"backscroll show {frame_id or 1} --save frame.jpg --home {h}", "a frame, its picture"),
        (f"backscroll status --home {h}", "the store, the key, the counts"),
        (f"backscroll demo --seconds 30 --home {h}", "record more into the same store"),
        ("backscroll start", "record your own X11 desktop (Ctrl-C stops it)"),
        (f"rm -rf {h}", "remove the demo's store"),
    ):
        echo(f"  {command:<66}  # {why}")


def _q(value: str | Path) -> str:
    return shlex.quote(str(value))
