"""Headless desktops for the tests, the benchmarks and ``backscroll demo``: equipment, not
part of the library, which never imports them (an import contract in pyproject.toml; the
demo imports them inside the function that runs it).

    x11.py        Xvfb, a private session bus, openbox, AT-SPI (``headless_desktop``)
    sway.py       headless sway run as an unprivileged user (``sway_desktop``)
    gnome.py      headless GNOME Shell, PipeWire, a Mutter remote desktop (``gnome_desktop``)
    _user.py      what the sway and GNOME desktops share: a user, buses, components
    processes.py  marked processes, stopped as groups, swept after a killed run
    bus.py        one blocking D-Bus call by a bus's address

Each desktop is a context manager that starts everything it needs in a temporary folder and
leaves nothing behind; a component that cannot start raises ``DesktopError``.
"""

from headless._user import WaylandWindow
from headless.gnome import GnomeDesktop, gnome_desktop
from headless.processes import DesktopError, marked_processes, processes_of, wait_for
from headless.sway import SwayDesktop, sway_desktop
from headless.x11 import Desktop, Window, headless_desktop

__all__ = [
    "Desktop",
    "DesktopError",
    "GnomeDesktop",
    "SwayDesktop",
    "WaylandWindow",
    "Window",
    "gnome_desktop",
    "headless_desktop",
    "marked_processes",
    "processes_of",
    "sway_desktop",
    "wait_for",
]
