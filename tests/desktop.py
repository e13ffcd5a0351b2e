"""The headless X11 desktop of ``headless.x11``, with what only the tests add to it.

    with headless_desktop(keyring=True) as desk:
        term = desk.open_xterm(["ECONNREFUSED 127.0.0.1:5432"], title="server log")
        desk.activate(term.window_id)
        ...

On top of the rig's desktop (Xvfb, a private session bus, openbox, AT-SPI: see
``headless/x11.py``) this adds:

    gnome-keyring (``keyring=True``, or    through tests/keyring_daemon.py, on the same bus
      ``desk.start_keyring()`` later)
    ``stop_x_server`` / ``restart_x_server``  a display that goes away and comes back on
                                           the same number

and the ``desktop`` session fixture (conftest.py imports it). A missing binary fails the
desktop tests with the Debian package to install: CI installs them, they are never skipped.
The bench scripts use ``headless_desktop()`` directly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from headless import x11
from headless.processes import (
    MARKER,
    TERMINAL_FONT,
    DesktopError,
    marked_processes,
    processes_of,
    stop_group,
)
from headless.x11 import HEIGHT, PACKAGES, WIDTH, Window, missing_packages, require

__all__ = [
    "HEIGHT",
    "MARKER",
    "PACKAGES",
    "TERMINAL_FONT",
    "WIDTH",
    "Desktop",
    "DesktopError",
    "Window",
    "desktop",
    "headless_desktop",
    "marked_processes",
    "missing_packages",
    "processes_of",
    "require",
]


class Desktop(x11.Desktop):
    """The rig's X11 desktop, plus a gnome-keyring on its session bus when asked for."""

    keyring: Any = None

    def start_keyring(self) -> Any:
        """gnome-keyring's Secret Service on this desktop's session bus (started once).

        tests/keyring_daemon.py (the keyring tests' helper) starts it with a private HOME
        and runtime dir of its own; its process carries this desktop's marker, so the sweep
        at the end would catch it even if ``stop`` were never reached.
        """
        if self.keyring is None:
            from tests.keyring_daemon import start_keyring

            self.keyring = start_keyring(self.env)
        return self.keyring

    def stop_x_server(self) -> None:
        """Stop Xvfb, as a display that goes away: openbox and the windows lose it too."""
        for component in [c for c in self.components if c.name == "Xvfb"]:
            stop_group(component.process)
            self.components.remove(component)

    def restart_x_server(self) -> None:
        """A new Xvfb on the same display number (no auth, as before), and openbox on it."""
        self._start_x(self.display)
        self._start_window_manager()

    def stop(self) -> None:
        if self.keyring is not None:
            with contextlib.suppress(Exception):
                self.keyring.stop()
            self.keyring = None
        super().stop()


@contextlib.contextmanager
def headless_desktop(
    *, keyring: bool = False, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> Iterator[Desktop]:
    """Start the desktop (and the keyring when ``keyring``), yield it, and stop all of it;
    ``size`` is the X screen's (``Desktop.set_monitors`` cuts it into monitors)."""
    with x11.headless_desktop(Desktop, size=size) as desk:
        if keyring:
            desk.start_keyring()
        yield desk


# A pytest session fixture. Several test modules (and conftest.py) may import it: they all
# share one desktop, which stops after the last of them is done.
_shared: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session")
def desktop() -> Iterator[Desktop]:
    """The headless desktop, started once for the whole test session."""
    if _shared["users"] == 0:
        stack = contextlib.ExitStack()
        try:
            _shared["desktop"] = stack.enter_context(headless_desktop())
        except DesktopError as error:
            pytest.fail(str(error), pytrace=False)
        _shared["stack"] = stack
    _shared["users"] += 1
    try:
        yield _shared["desktop"]
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            _shared.pop("desktop")
            _shared.pop("stack").close()
