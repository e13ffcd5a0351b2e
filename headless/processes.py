"""The processes of the headless desktops: started marked, stopped as groups, swept when a
run died before its cleanup.

Every process a desktop starts carries ``MARKER=<owner pid>-<random>`` in its environment,
so the helpers those processes spawn themselves (an accessibility bus's own dbus-daemon, a
registry) are found in /proc and killed with the desktop; its folder is named
``FOLDER_PREFIX<owner pid>-…``. A desktop whose owner no longer exists (SIGKILL, a CI
timeout) is removed by the next desktop that starts (``sweep_orphans``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar


class DesktopError(Exception):
    """The headless desktop could not start (a binary is missing or a component failed)."""


# Generous: a loaded CI machine can take a few seconds to start Xvfb or a GTK app.
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 3.0
MARKER = "BACKSCROLL_HEADLESS_DESKTOP"
FOLDER_PREFIX = "backscroll-desktop-"

# What a pipe holds unread, with room to spare (Linux: 64 KiB), so a write never blocks.
PIPE_HOLDS = 32 << 10

# The xterms' font (Xft): the signature and OCR figures were measured with it.
TERMINAL_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")

# Only the marker and the variables below reach the desktop's programs from the caller's
# environment: a developer's real session (its bus, its keyring, its Wayland socket) must
# be unreachable from a test.
INHERITED = ("PATH", "LANG", "LC_ALL", "TZ", "TERM", "PYTHONPATH", "VIRTUAL_ENV", "CI")

T = TypeVar("T")


def wait_for(check: Callable[[], T], what: str, timeout: float = 20.0) -> T:
    """Poll ``check`` until it returns something truthy, and return that; a desktop's
    components answer in their own time. Raises TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def missing_packages(packages: Mapping[str, str]) -> list[str]:
    """The Debian packages to install before a desktop of ``packages`` (binary: package) can
    start (empty when none)."""
    missing = [package for binary, package in packages.items() if not _found(binary)]
    if not TERMINAL_FONT.exists():
        missing.append("fonts-dejavu-core")
    return sorted(set(missing))


def _found(binary: str) -> bool:
    if os.path.isabs(binary):
        return os.access(binary, os.X_OK)
    return shutil.which(binary) is not None


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process's whole group, then SIGKILL what is left after a grace period."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_TIMEOUT_S)


def _markers() -> Iterator[tuple[int, str]]:
    """(pid, marker value) of every live process started by some test desktop."""
    prefix = f"{MARKER}=".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            for variable in (entry / "environ").read_bytes().split(b"\0"):
                if variable.startswith(prefix):
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        yield int(entry.name), variable[len(prefix) :].decode()
                    break
        except OSError:
            continue


def marked_processes(token: str) -> list[int]:
    """Pids of live processes whose environment carries this desktop's marker."""
    return [pid for pid, value in _markers() if value == token]


def processes_of(owner_pid: int) -> list[int]:
    """Pids of live processes of any desktop that the process ``owner_pid`` started."""
    return [pid for pid, value in _markers() if value.split("-", 1)[0] == str(owner_pid)]


def sweep_orphans() -> None:
    """Remove what desktops of test runs that died (SIGKILL, a CI timeout) left behind.

    Markers are "<owner pid>-<random>" and folders "backscroll-desktop-<owner pid>-…"; an
    owner that no longer exists cannot clean up after itself.
    """

    def dead(owner: str) -> bool:
        return owner.isdigit() and not Path(f"/proc/{owner}").exists()

    for pid, value in _markers():
        if dead(value.split("-", 1)[0]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        if dead(folder.name[len(FOLDER_PREFIX) :].split("-", 1)[0]):
            shutil.rmtree(folder, ignore_errors=True)


def sweep(token: str) -> None:
    """Kill what the components spawned outside their process groups."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while pids := marked_processes(token):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise DesktopError(f"processes of the test desktop survived SIGKILL: {pids}")
        time.sleep(0.02)
