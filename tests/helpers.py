"""What many test modules build the same way: events, import lines, a CLI call in-process,
the capture daemon as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from eventlog.events import FrameCaptured

T0 = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC, in microseconds
NOW = datetime.now(UTC)


def needs(missing: list[str], desktop: str) -> pytest.MarkDecorator:
    """Skip a module whose ``desktop`` lacks the Debian packages ``missing``, saying what to
    install; on CI (``CI`` set) run it anyway, to fail, as ``make install`` installs them."""
    return pytest.mark.skipif(
        bool(missing) and not os.environ.get("CI"),
        reason=f"the {desktop} desktop needs: apt-get install -y {' '.join(missing)}",
    )


def frame_event(
    offset: int,
    captured_us: int = T0,
    text: str = "",
    *,
    app: str = "term",
    title: str = "bash",
) -> FrameCaptured:
    """A frame with id ``offset``; its default text differs per frame and compresses as
    terminal text does (the log tests size segments by it)."""
    return FrameCaptured(
        ts_us=captured_us,
        frame_id=offset,
        captured_us=captured_us,
        app=app,
        title=title,
        text=text or f"$ make test # frame {offset}\n" + "ok " * 40,
        text_source="ocr",
    )


def import_line(days_ago: float, app: str, title: str, text: str, image: Path | None = None) -> str:
    """One line of ``backscroll import``: a frame seen ``days_ago`` days before the session."""
    ts = (NOW - timedelta(days=days_ago)).isoformat()
    row = {"ts": ts, "app": app, "title": title, "text": text}
    if image:
        row["image"] = str(image)
    return json.dumps(row)


def populate(frames: list[dict[str, Any]], image: Path | None = None) -> None:
    """Import ``frames`` (import lines as dicts) into the test's store, each with ``image``
    as its screenshot when given."""
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    rows = [dict(f, image=str(image)) if image else f for f in frames]
    with MemoryStore(write=True) as store:
        import_frames(store, [json.dumps(r) for r in rows])


def ago(minutes: float) -> str:
    """The local time ``minutes`` ago, as an import line's ``ts``."""
    return (datetime.now().astimezone() - timedelta(minutes=minutes)).isoformat()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``backscroll *args`` in this process: its exit code, stdout and stderr."""
    from backscroll.cli import main

    argv = sys.argv
    sys.argv = ["backscroll", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    out, err = capsys.readouterr()
    return code, out, err


# Quick to react, slow to fall back: a test's frames come from its switches, not the interval.
FAST = ["config", "--poll", "0.2", "--min-interval", "0.5", "--interval", "30"]


class DaemonProcess:
    """``backscroll start`` as a process of the test, with its own home and environment."""

    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.home = home
        self.env = env | {"BACKSCROLL_HOME": str(home)}
        self.process: subprocess.Popen[bytes] | None = None
        self.log = home.parent / "daemon.log"

    @classmethod
    def of(cls, desktop_env: dict[str, str], home: Path) -> DaemonProcess:
        """The daemon of a desktop run by the test user (sway, GNOME): the caller's
        environment without its own display, and the desktop's ``daemon_env``."""
        own = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        return cls(own | desktop_env, home)

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "backscroll", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "backscroll", "start"], env=self.env, stdout=log, stderr=log
            )
        from headless import wait_for

        wait_for(lambda: (self.home / "daemon.json").exists(), "the daemon's heartbeat")

    def stop(self, sig: int = signal.SIGINT) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                # Killed, not left running: a daemon left behind records every later test's
                # windows on the shared desktop and takes its CPU (one failure became dozens).
                self.process.kill()
                self.process.wait()
                raise AssertionError(
                    f"the daemon did not stop within 30 s of signal {sig}"
                ) from None

    def close(self) -> None:
        """Stop, and show the end of the daemon's log with the test's output."""
        self.stop()
        if self.log.exists():
            sys.stderr.write(self.log.read_text()[-4000:])

    def frames(self) -> list[Any]:
        """The frames in the store, newest first (``query.search.Hit``)."""
        from backscroll.store import MemoryStore

        with MemoryStore(self.home) as store:
            return store.timeline(limit=500)

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.cli("status", "--json"))
        return result


def run_time(command: list[str]) -> float:
    """Seconds ``command`` takes to run to its end, here and now: the span a test that kills
    the same command "at any moment" draws its moments from. A fixed span outlives the work
    once the code gets faster (catching up 20,000 frames came to take 0.5 s), and then no
    child is killed at all."""
    started = time.monotonic()
    subprocess.run(command, check=True, timeout=600)
    return time.monotonic() - started


def kill_after(child: subprocess.Popen[Any], seconds: float) -> bool:
    """SIGKILL ``child`` ``seconds`` after now, unless it has ended by then (waiting the rest
    out would kill nothing): whether it was killed."""
    try:
        child.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
        return child.wait() == -signal.SIGKILL


def quiet(daemon: DaemonProcess, seconds: float = 2.0) -> list[Any]:
    """The frames after ``seconds`` of letting the daemon run with nothing new on screen."""
    time.sleep(seconds)
    return daemon.frames()


SECRET_LINES = ["export DB_PASSWORD=hunter2horsebattery", "status: flibbertigibbet ready"]


def assert_the_secret_was_stored_redacted(daemon: DaemonProcess) -> None:
    """After a frame of ``SECRET_LINES`` (text encrypted): the stored text has the password
    redacted, and after the daemon stops no file of the home holds either word in clear."""
    from backscroll.store import MemoryStore
    from headless import wait_for
    from tests.residue import files_containing

    wait_for(lambda: daemon.frames(), "a frame")
    with MemoryStore(daemon.home) as store:
        (hit,) = wait_for(lambda: store.search("flibbertigibbet"), "the frame in search")
        text = store.get(hit.id).text or ""
    assert "[REDACTED:password]" in text and "hunter2horsebattery" not in text
    daemon.stop()
    for word in ("hunter2horsebattery", "flibbertigibbet"):
        assert files_containing(daemon.home, word) == []


def besides_torn_tails(problems: list[Any]) -> list[Any]:
    """What ``verify`` reports (a log's ``Problem``s or a store's lines) besides the torn tails
    of cut-off appends that a crash leaves kept aside: reported, so that a person knows their
    bytes exist, but what a crash is expected to leave."""
    return [p for p in problems if "torn tail of a cut-off append" not in str(p)]


class Keeping:
    """A store's kept memories, written as an agent writes them (through the contract),
    with the revised preference both view tests start from."""

    def __init__(self, store: Any, frame: int) -> None:
        from backscroll.contract import parse
        from backscroll.contract.keep import ReviseRequest
        from backscroll.keep import Keeper

        self.keeper = Keeper(store)
        self.spanish = self.keep(
            text="Answers in Spanish.",
            kind="preference",
            subject="user",
            predicate="answer_language",
            value="spanish",
            source=f"frame:{frame}",
        )
        revised = {"id": self.spanish, "expected_version": 1, "text": "Answers in Spanish, always."}
        self.keeper.revise(parse(ReviseRequest, revised))

    def keep(self, **given: Any) -> str:
        """A memory kept; its id."""
        from backscroll.contract import parse
        from backscroll.contract.keep import KeepRequest

        return self.keeper.keep(parse(KeepRequest, given)).memory.id

    def review_in(self, space: str) -> None:
        """``space`` made to require review."""
        from backscroll.contract import parse
        from backscroll.contract.keep import SpaceRequest

        self.keeper.configure(parse(SpaceRequest, {"name": space, "require_review": True}))
