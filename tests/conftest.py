"""The fixtures many test modules share: a private home for every test, the headless
desktops (the session's X11 desktop, a module's sway or GNOME desktop), the desktop a test
records with its windows closed after it, and the real daemon recording it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headless import GnomeDesktop, SwayDesktop, gnome_desktop, sway_desktop
from tests.desktop import desktop  # noqa: F401  (the session's headless desktop)
from tests.helpers import FAST, DaemonProcess

# A suite started in the background by a non-interactive shell (`make test &`, nohup) inherits
# SIGINT ignored, and so would every daemon it starts, which the tests stop with SIGINT as
# Ctrl-C does: a handled signal is reset to its default in a child, an ignored one is not.
signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent

# What starts a desktop, a compositor or a browser: `make check` leaves out every test that
# is marked desktop, so each of these is marked desktop as well.
RIGS = ("sway", "gnome", "browser")
DESKTOP_FIXTURES = {"desktop", "sway", "gnome", "rig", "desk", "daemon"}


# Before pytest-xdist's own hook reads the groups (``make test`` runs `-n 2 --dist loadgroup`).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark desktop every test of a rig, and every test that uses a desktop fixture; put them
    all in one xdist group, so that one worker runs them in turn, on one X11 desktop, sway
    and GNOME, while the other runs the rest."""
    for item in items:
        uses_desktop = bool(DESKTOP_FIXTURES & set(getattr(item, "fixturenames", ())))
        if uses_desktop or any(item.get_closest_marker(rig) for rig in RIGS):
            item.add_marker(pytest.mark.desktop)
        if item.get_closest_marker("desktop"):
            item.add_marker(pytest.mark.xdist_group("desktop"))


@pytest.fixture(autouse=True)
def backscroll_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test touches the real home: every test gets a private, empty store folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("BACKSCROLL_HOME", str(home))
    monkeypatch.delenv("BACKSCROLL_KEYSTORE", raising=False)
    return home


@pytest.fixture(autouse=True)
def words_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked ``meaning`` runs in-process as on a machine without the model: each
    import and search would otherwise load it (0.5 s) and embed every frame (0.13 s each),
    which made the whole suite three times as long. Processes a test starts keep it."""
    if request.node.get_closest_marker("meaning") is None:
        monkeypatch.setattr("projector.embedder.available", lambda: False)


@pytest.fixture
def png(tmp_path: Path) -> Path:
    """A small screenshot file, for an imported frame's image (its thumbnail)."""
    from PIL import Image

    path = tmp_path / "screen.png"
    Image.new("RGB", (96, 60), (30, 120, 200)).save(path)
    return path


@pytest.fixture(scope="module")
def sway() -> Iterator[SwayDesktop]:
    """A headless sway desktop, started once for the module."""
    with sway_desktop() as desk:
        yield desk


@pytest.fixture(scope="module")
def gnome() -> Iterator[GnomeDesktop]:
    """A headless GNOME Shell, started once for the module."""
    with gnome_desktop() as desk:
        yield desk


@pytest.fixture
def rig(request: pytest.FixtureRequest) -> Any:
    """The desktop a test records: the module's sway or GNOME desktop when the module is
    marked so, else the session's X11 desktop. A module overrides it for another desktop."""
    for name in ("sway", "gnome"):
        if request.node.get_closest_marker(name):
            return request.getfixturevalue(name)
    return request.getfixturevalue("desktop")


@pytest.fixture
def desk(rig: Any) -> Iterator[Any]:
    """``rig``, with the windows a test opened closed after it."""
    yield rig
    rig.close()


@pytest.fixture
def camera(desk: Any) -> Iterator[Any]:
    """The capture backends of ``desk``, as the daemon opens them."""
    from capture.backends import backends
    from capture.camera import Camera

    opened = Camera(backends(environ=desk.env, system="linux"))
    yield opened
    opened.close()


@pytest.fixture
def daemon_kind() -> type[DaemonProcess]:
    """The class of ``daemon``: a module overrides it (tests/test_daemon.py's lets the X11
    desktop settle before it starts)."""
    return DaemonProcess


@pytest.fixture
def daemon(
    desk: Any, backscroll_home: Path, daemon_kind: type[DaemonProcess]
) -> Iterator[DaemonProcess]:
    """The real daemon, not started yet, set up to record ``desk`` quickly (``FAST``)."""
    running = daemon_kind.of(desk.daemon_env, backscroll_home)
    running.cli(*FAST)
    yield running
    running.close()
