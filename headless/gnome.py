"""A real, private, headless GNOME desktop: for the GNOME tests and benchmarks.

    with gnome_desktop() as desk:
        invoice = desk.open_zenity_text("INV-77120 is due", "Invoice")
        log = desk.open_image_text(["ECONNREFUSED 127.0.0.1:5432"], "server log")
        desk.focus(invoice)
        Daemon(home, environ=desk.daemon_env) ...

As on the sway desktop (``headless.sway``, whose base ``headless._user`` it shares), every
component and window runs as the unprivileged user while the caller (root on CI) reaches
the user's sockets by absolute path. It starts:

    dbus-daemon (system)        gnome-shell asks logind, GeoClue, PolicyKit… on the system
                                bus; without one it exits, and the real one fails on login1;
                                a private one with no service files answers "no such name"
    dbus-daemon (session)       open to the caller, no service activation
    at-spi-bus-launcher         the accessibility bus; IsEnabled is set
    pipewire, wireplumber       Mutter's screen casts are PipeWire streams; the session
                                manager links them to their readers
    gnome-shell                 --headless --virtual-monitor 1920x1080 --wayland --no-x11
                                (monitor "Meta-0"); settings from a key file: Alt+Tab
                                switches windows (not apps), no animations, no screen
                                lock, no notification banners (its first says "Screen
                                Lock disabled" for a few seconds: a screen that changes)

and, on a thread of the caller, a connection to the session bus holding a Mutter remote
desktop session: its virtual keyboard leaves the overview gnome-shell starts in, drives
Alt+Tab, and must stay for the desktop's life, because without a keyboard GTK windows never
get keyboard focus and AT-SPI never marks a frame ACTIVE. The same connection holds a
Mutter screen cast of the desktop (``capture.gnome.ScreenCast``) for ``screenshot``.

``active()`` is the ACTIVE frame on AT-SPI, which is all a client can learn of the focus on
GNOME (``org.gnome.Shell.Introspect`` is refused to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import glob
import os
import subprocess
import threading
import time
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from capture.gnome import ScreenCast
from headless._user import UserDesktop, WaylandWindow, prepared
from headless.bus import DBUS, ask
from headless.processes import (
    INHERITED,
    MARKER,
    START_TIMEOUT_S,
    TERMINAL_FONT,
    DesktopError,
    marked_processes,
    wait_for,
)
from headless.processes import missing_packages as packages_missing

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus
    from PIL import Image

WIDTH, HEIGHT = 1920, 1080
IMAGE_APP = "image-viewer"  # the AT-SPI application name of ``open_image_text``'s windows

# X keysyms for ``press``.
ALT = 0xFFE9
TAB = 0xFF09
ESCAPE = 0xFF1B

PACKAGES = {
    "gnome-shell": "gnome-shell",
    "pipewire": "pipewire",
    "wireplumber": "wireplumber",
    "zenity": "zenity",
    "dbus-daemon": "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
    # Debian's interpreter with its GTK bindings draws ``open_image_text``'s window.
    "/usr/bin/python3": "python3-gi",
    "Xwayland": "xwayland",
    "xterm": "xterm",
    "xdpyinfo": "x11-utils",
}
# What no binary stands for: (glob, package).
_LIBRARIES = (
    ("/usr/lib/*/girepository-1.0/Gtk-3.0.typelib", "gir1.2-gtk-3.0"),
    ("/usr/lib/*/gstreamer-1.0/libgstpipewire.so", "gstreamer1.0-pipewire"),
    ("/usr/lib/*/girepository-1.0/GstApp-1.0.typelib", "gir1.2-gst-plugins-base-1.0"),
)

_SETTINGS = """\
[org/gnome/desktop/wm/keybindings]
switch-windows=['<Alt>Tab']
switch-applications=['<Super>Tab']

[org/gnome/desktop/interface]
enable-animations=false

[org/gnome/desktop/session]
idle-delay=uint32 0

[org/gnome/desktop/screensaver]
lock-enabled=false

[org/gnome/desktop/notifications]
show-banners=false
"""

# The window of ``open_image_text``: a PNG, no text on AT-SPI, a frame titled argv[2].
_IMAGE_PROGRAM = """\
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk

GLib.set_prgname(sys.argv[3])
window = Gtk.Window(title=sys.argv[2])
window.add(Gtk.Image.new_from_file(sys.argv[1]))
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
"""
IMAGE_FONT_PX = 20  # the words of a 20 px DejaVu Sans Mono line are read whole by tesseract

# AT-SPI's ATSPI_STATE_ACTIVE: bit 1 of the state set's first word.
_ACTIVE = 1 << 1
_ACCESSIBLE = "org.a11y.atspi.Accessible"
_PROPERTIES = "org.freedesktop.DBus.Properties"

T = TypeVar("T")


def missing_packages() -> list[str]:
    """The Debian packages to install before a GNOME desktop can start (empty when none)."""
    missing = packages_missing(PACKAGES)
    missing += [package for pattern, package in _LIBRARIES if not glob.glob(pattern)]
    return sorted(set(missing))


@dataclass
class Frame:
    """A top-level accessible of an AT-SPI application: a window as GNOME's clients see it."""

    pid: int
    app: str
    title: str
    active: bool


class _Bus:
    """The desktop's own connections to its session and accessibility buses, on a thread
    of their own: Mutter ends a remote desktop or screen cast session when the connection
    that made it goes, so the connection lives as long as the desktop."""

    def __init__(self, session: str, accessibility: str) -> None:
        from dbus_fast.aio import MessageBus

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="gnome-desktop-bus", daemon=True
        )
        self._thread.start()

        async def connect(address: str) -> MessageBus:
            return await MessageBus(bus_address=address).connect()  # made on the loop's thread

        self.session = self.run(connect(session))
        self.a11y = self.run(connect(accessibility))

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise DesktopError(f"no answer on the desktop's bus within {timeout} s") from None

    def call(self, *message: Any) -> list[Any]:
        """One method call on the session bus (``ask``'s arguments); its reply body."""
        return self.run(ask(self.session, *message))

    def close(self) -> None:
        async def disconnect() -> None:  # the connections belong to the loop's thread
            for bus in (self.session, self.a11y):
                bus.disconnect()

        self.run(disconnect())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)
        self._loop.close()


@dataclass
class GnomeDesktop(UserDesktop):
    """A running headless GNOME desktop; see the module docstring."""

    packages: ClassVar[dict[str, str]] = PACKAGES
    kind: ClassVar[str] = "GNOME"

    monitors: tuple[str, ...] = (f"{WIDTH}x{HEIGHT}",)  # gnome-shell's virtual monitors
    xwayland: bool = False  # whether gnome-shell starts XWayland, for X clients
    _bus: _Bus | None = None
    _keyboard: str = ""  # the remote desktop session's object path
    _screen: ScreenCast | None = None

    @property
    def wayland_socket(self) -> str:
        return str(self.run_dir / "wayland-0")

    @property
    def daemon_env(self) -> dict[str, str]:
        """The environment of a daemon that records this desktop (as the caller)."""
        env = {name: os.environ[name] for name in INHERITED if name in os.environ}
        return env | {
            MARKER: self.token,
            "WAYLAND_DISPLAY": self.wayland_socket,
            "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "GNOME",
            "XDG_RUNTIME_DIR": str(self.run_dir),  # PipeWire's socket, pipewire-0, is there
            "DBUS_SESSION_BUS_ADDRESS": self.bus_address,
            "AT_SPI_BUS_ADDRESS": self.env.get("AT_SPI_BUS_ADDRESS", ""),
            **(self.x_display() if self.xwayland else {}),
        }

    def x_display(self) -> dict[str, str]:
        """DISPLAY and XAUTHORITY of the XWayland that gnome-shell started (it carries this
        desktop's marker, as gnome-shell's child)."""

        def find() -> dict[str, str] | None:
            for pid in marked_processes(self.token):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
                except OSError:
                    continue
                if Path(argv[0]).name == "Xwayland" and "-auth" in argv:
                    return {"DISPLAY": argv[1], "XAUTHORITY": argv[argv.index("-auth") + 1]}
            return None

        found = wait_for(find, "XWayland", START_TIMEOUT_S)
        assert found is not None
        return found

    # ---------------------------------------------------------------- windows

    def open_xterm(self, lines: Sequence[str], title: str) -> WaylandWindow:
        """An xterm (an X client, through XWayland) showing ``lines``; it publishes nothing
        on AT-SPI, so X11 alone says it is in front."""
        path = self._private_file("xterm-", "text.txt", "\n".join(lines) + "\n")
        argv = ["xterm", "-T", title, "-fa", "DejaVu Sans Mono", "-fs", "11"]
        argv += ["-bg", "white", "-fg", "black", "-e", f"cat {path}; exec sleep 100000"]
        process, _log = self._spawn("xterm", argv, env=self.env | self.x_display())
        window = WaylandWindow("xterm", process.pid, process, title)
        self.windows.append(window)
        return window

    def open_zenity_text(self, text: str, title: str) -> WaylandWindow:
        """A GTK ``zenity --text-info`` window showing ``text`` (its text is on AT-SPI);
        returns once it is the active frame."""
        path = self._private_file("zenity-", "text.txt", text)
        argv = ["zenity", "--text-info", f"--filename={path}", f"--title={title}"]
        return self._open("zenity", argv, title)

    def open_image_text(self, lines: Sequence[str], title: str) -> WaylandWindow:
        """A GTK window (app ``IMAGE_APP``) showing ``lines`` drawn into an image, black on
        white in DejaVu Sans Mono: its frame is on AT-SPI, its text only in its pixels."""
        from io import BytesIO

        from PIL import Image, ImageDraw, ImageFont

        font = ImageFont.truetype(str(TERMINAL_FONT), IMAGE_FONT_PX)
        step = IMAGE_FONT_PX * 3 // 2
        width = max(400, *(int(font.getlength(line)) + 40 for line in lines))
        image = Image.new("RGB", (width, max(200, step * len(lines) + 40)), "white")
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(lines):
            draw.text((20, 20 + row * step), line, font=font, fill="black")
        png = BytesIO()
        image.save(png, "PNG")
        picture = self._private_file("image-", "text.png", png.getvalue())
        program = self._private_file("image-", "window.py", _IMAGE_PROGRAM)
        argv = ["/usr/bin/python3", str(program), str(picture), title, IMAGE_APP]
        return self._open(IMAGE_APP, argv, title)

    def _open(self, name: str, argv: list[str], title: str) -> WaylandWindow:
        env = self.env | {"WAYLAND_DISPLAY": "wayland-0"}
        process, log = self._spawn(name, argv, env=env)
        window = WaylandWindow(name, process.pid, process, title)
        self.windows.append(window)
        try:
            wait_for(lambda: self._active_pid() == process.pid, f"{title} active", START_TIMEOUT_S)
        except TimeoutError:
            raise self._failure(name, process, log, "its window never became active") from None
        return window

    def frames(self) -> list[Frame]:
        """Every application's top-level frames on AT-SPI (gnome-shell's own included)."""
        bus = self._connected()

        async def walk() -> list[Frame]:
            found: list[Frame] = []
            registry = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
            (apps,) = await ask(bus.a11y, *registry, _ACCESSIBLE, "GetChildren")
            for name, path in apps:
                # An application that exits during the walk is simply left out.
                with contextlib.suppress(DesktopError):
                    app = await _accessible_name(bus.a11y, name, path)
                    (pid,) = await ask(bus.a11y, *DBUS, "GetConnectionUnixProcessID", "s", [name])
                    (children,) = await ask(bus.a11y, name, path, _ACCESSIBLE, "GetChildren")
                    for child, child_path in children:
                        (state,) = await ask(bus.a11y, child, child_path, _ACCESSIBLE, "GetState")
                        title = await _accessible_name(bus.a11y, child, child_path)
                        found.append(Frame(int(pid), app, title, bool(state[0] & _ACTIVE)))
            return found

        return bus.run(walk())

    def active(self) -> tuple[str, str] | None:
        """(app, title) of the frame AT-SPI marks ACTIVE, or None when none is."""
        frame = next((f for f in self.frames() if f.active), None)
        return None if frame is None else (frame.app, frame.title)

    def _active_pid(self) -> int | None:
        return next((f.pid for f in self.frames() if f.active), None)

    def focus(self, window: WaylandWindow) -> None:
        """Make ``window`` the active one as a person would, with Alt+Tab (held Alt, Tab
        ``n`` times: the ``n``-th most recently used window); returns once AT-SPI marks it
        ACTIVE. Trying n = 1, 2, … finds it: a switch moves only the windows before it."""
        for tabs in range(1, len(self.windows) + 1):
            before = self._active_pid()
            if before == window.pid:
                return
            self.press(ALT, *[TAB] * tabs)
            # A switch to a window already gone, or none at all, is seen as no change.
            with contextlib.suppress(TimeoutError):
                wait_for(functools.partial(self._switched_from, before), "a switch", 3.0)
        if self._active_pid() != window.pid:
            raise DesktopError(f"Alt+Tab never made {window.title!r} active")

    def _switched_from(self, pid: int | None) -> bool:
        return self._active_pid() not in (None, pid)

    def press(self, *keysyms: int) -> None:
        """Press ``keysyms`` in order and release them in reverse, on the virtual keyboard
        (``press(ALT, TAB)`` is Alt+Tab; a keysym repeated is pressed again)."""
        bus = self._connected()
        session = ("org.gnome.Mutter.RemoteDesktop", self._keyboard)
        interface = "org.gnome.Mutter.RemoteDesktop.Session"
        held: list[int] = []
        for keysym in keysyms:
            if keysym in held:
                bus.call(*session, interface, "NotifyKeyboardKeysym", "ub", [keysym, False])
                held.remove(keysym)
            bus.call(*session, interface, "NotifyKeyboardKeysym", "ub", [keysym, True])
            held.append(keysym)
        for keysym in reversed(held):
            bus.call(*session, interface, "NotifyKeyboardKeysym", "ub", [keysym, False])

    def escape_overview(self) -> None:
        """Leave the Activities overview (gnome-shell starts in it) with Escape. Outside it
        Escape would reach the focused window (and close a zenity dialog): nothing is
        pressed then."""
        if not self._overview_active():
            return
        self.press(ESCAPE)
        wait_for(lambda: not self._overview_active(), "the overview closed", START_TIMEOUT_S)

    def _overview_active(self) -> bool:
        (value,) = self._connected().call(
            "org.gnome.Shell",
            "/org/gnome/Shell",
            _PROPERTIES,
            "Get",
            "ss",
            ["org.gnome.Shell", "OverviewActive"],
        )
        return bool(value.value)

    # ----------------------------------------------------------------- pixels

    def screenshot(self) -> Image.Image:
        """The monitor as an RGB image, through a Mutter screen cast."""
        if self._screen is None:
            self._screen = ScreenCast(
                self.bus_address, pipewire_socket=str(self.run_dir / "pipewire-0")
            )
        return self._screen.grab()[0]

    def settle(self, *, quiet_s: float = 0.3, timeout: float = 5.0) -> None:
        """Wait until the monitor has not changed for ``quiet_s``."""
        deadline = time.monotonic() + timeout
        last = self.screenshot().tobytes()
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < quiet_s:
            if time.monotonic() > deadline:
                raise DesktopError(f"the screen kept changing for {timeout} s")
            now = self.screenshot().tobytes()
            if now != last:
                last, quiet_since = now, time.monotonic()

    # ------------------------------------------------------------ compositor

    def stop_compositor(self) -> None:
        """Stop gnome-shell, as a compositor that crashes: the windows lose it too; the
        buses, AT-SPI and PipeWire stay."""
        self.close()
        if self._screen is not None:
            self._screen.close()
            self._screen = None
        self._keyboard = ""
        self._stop_components("gnome-shell")

    def start_compositor(self) -> None:
        """gnome-shell on this desktop's runtime folder (again), its virtual keyboard, and
        out of the overview it starts in."""
        settings = self.root / "config" / "glib-2.0" / "settings" / "keyfile"
        if not settings.exists():
            for folder in (settings.parent.parent, settings.parent):
                folder.mkdir(mode=0o700, exist_ok=True)
                os.chown(folder, self.uid, self.gid)
            settings.write_text(_SETTINGS)
            os.chown(settings, self.uid, self.gid)
        argv = ["gnome-shell", "--headless"]
        for size in self.monitors:
            argv += ["--virtual-monitor", size]
        argv += ["--wayland"] if self.xwayland else ["--wayland", "--no-x11"]
        process, log = self._spawn("gnome-shell", argv)
        names = ("org.gnome.Shell", "org.gnome.Mutter.ScreenCast", "org.gnome.Mutter.RemoteDesktop")
        bus = self._connected()

        def ready() -> bool:
            if process.poll() is not None:
                raise self._failure("gnome-shell", process, log, "exited early")
            owned = [bus.call(*DBUS, "NameHasOwner", "s", [name])[0] for name in names]
            return all(owned) and os.path.exists(self.wayland_socket)

        try:
            wait_for(ready, "gnome-shell", START_TIMEOUT_S * 2)
        except TimeoutError:
            raise self._failure("gnome-shell", process, log, "not ready") from None
        remote = "org.gnome.Mutter.RemoteDesktop"
        (self._keyboard,) = bus.call(
            remote, "/org/gnome/Mutter/RemoteDesktop", remote, "CreateSession"
        )
        bus.call(remote, self._keyboard, f"{remote}.Session", "Start")
        # The names are owned before the shell has finished starting; its start ends by
        # showing the overview (GNOME 40 and later), so that is the sign it is ready.
        wait_for(self._overview_active, "gnome-shell's overview", START_TIMEOUT_S)
        self.escape_overview()
        if self.xwayland:
            wait_for(self._xwayland_answers, "XWayland", START_TIMEOUT_S)

    def _xwayland_answers(self) -> bool:
        """Whether XWayland takes X clients yet (it is started after gnome-shell is ready)."""
        x = self.x_display()
        done = subprocess.run(
            ["xdpyinfo", "-display", x["DISPLAY"]],
            env=os.environ | {"XAUTHORITY": x["XAUTHORITY"]},
            capture_output=True,
            timeout=START_TIMEOUT_S,
            check=False,
        )
        return done.returncode == 0

    # ------------------------------------------------------------ start / stop

    def _connected(self) -> _Bus:
        if self._bus is None:
            self._bus = _Bus(self.bus_address, self.env["AT_SPI_BUS_ADDRESS"])
        return self._bus

    def _start_pipewire(self) -> None:
        process, log = self._spawn("pipewire", ["pipewire"])
        try:
            wait_for((self.run_dir / "pipewire-0").exists, "PipeWire's socket", START_TIMEOUT_S)
        except TimeoutError:
            raise self._failure("pipewire", process, log, "no socket") from None
        self._spawn("wireplumber", ["wireplumber"])

    def stop(self) -> None:
        """Close every window, stop every component and remove the desktop's folder."""
        try:
            if self._screen is not None:
                self._screen.close()
            if self._bus is not None:
                self._bus.close()
        finally:
            self._screen = self._bus = None
            super().stop()


async def _accessible_name(bus: MessageBus, name: str, path: str) -> str:
    (value,) = await ask(bus, name, path, _PROPERTIES, "Get", "ss", [_ACCESSIBLE, "Name"])
    return str(value.value)


@contextlib.contextmanager
def gnome_desktop(
    monitors: Sequence[str] = (f"{WIDTH}x{HEIGHT}",), *, xwayland: bool = False
) -> Iterator[GnomeDesktop]:
    """Start the GNOME desktop (see the module docstring) with a virtual monitor of each
    size in ``monitors`` (left to right), and XWayland when ``xwayland``; yield it, and stop
    all of it."""
    session = {"XDG_CURRENT_DESKTOP": "GNOME", "GSETTINGS_BACKEND": "keyfile"}
    desk = prepared(GnomeDesktop, missing_packages(), session)
    desk.monitors, desk.xwayland = tuple(monitors), xwayland
    try:
        desk._start_bus("system")
        desk._start_bus()
        desk._start_accessibility()
        desk._start_pipewire()
        desk.start_compositor()
        yield desk
    finally:
        desk.stop()
