"""The capture backends of this session, behind four small interfaces.

    found = backends()              # CaptureError saying what is unsupported, if so
    window = found.probe.frontmost()
    image, monitor = found.screen.grab(window.geometry)
    text = found.ax.window_text(window.pid) if window else ""

Three backends exist, chosen from the session (``session()``) or forced by the config's
``capture_backend``:

- ``x11``: python-xlib for the probe, mss for the screen (``capture.screen``);
- ``wlroots`` (sway, Hyprland, river, …): one Wayland connection for the active window
  (wlr-foreign-toplevel) and the pixels (wlr-screencopy), sway's IPC for window
  rectangles (``capture.wlroots``);
- ``gnome`` (GNOME Shell on Wayland): the active window from AT-SPI, the pixels from
  Mutter's screen cast through PipeWire (``capture.gnome``).

All read text through AT-SPI (the accessibility bus is the same on every desktop) and
Tesseract (tesserocr in a worker process, pytesseract where tesserocr cannot be imported:
``capture.ocr_worker``). A Wayland session is never recorded through XWayland unless the
config asks for ``x11``, and then ``abilities`` says that only X clients are seen. KDE
Plasma on Wayland is refused, saying what is missing. Nothing heavy is imported until
``backends()`` is called.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from base.errors import CaptureError

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.ax import AxReader, AxText, Page
    from capture.ocr import Reading
    from capture.probe import Frontmost, Geometry, VisibleWindow, X11Probe
    from capture.screen import Monitor


class Probe(Protocol):
    """Which window is in front, and which windows are visible."""

    def frontmost(self) -> Frontmost | None: ...

    def visible_windows(self) -> list[VisibleWindow]: ...

    def close(self) -> None: ...


class Screen(Protocol):
    """Pixels of the monitor that holds a window."""

    def grab(self, geometry: Geometry | None) -> tuple[Image, Monitor]: ...


class TextReader(Protocol):
    """The focused window's text from the OS accessibility tree ("" when it has none)."""

    def window_text(
        self, pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0
    ) -> str: ...

    def window_read(
        self, pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0
    ) -> AxText:
        """``window_text`` with the object each stretch of it came from."""
        ...

    def extents(
        self, read: AxText, spans: Sequence[tuple[int, int]], *, timeout: float = 1.0
    ) -> list[Geometry] | None:
        """Where stretches of ``read.text`` are drawn, in root coordinates (None: not known)."""
        ...

    def address_bar(self, pid: int | None, host: str, *, timeout: float = 1.0) -> list[Geometry]:
        """Where the browser window of ``pid`` draws its page's address, in root coordinates."""
        ...

    def window_page(self, pid: int | None, *, timeout: float = 1.0) -> Page:
        """The focused window's accessible name and its page's address ("" when none)."""
        ...

    def close(self) -> None: ...


class OcrEngine(Protocol):
    """Text recognised in an image of a window."""

    def check(self) -> None:
        """Raise CaptureError saying what to install when this engine cannot run."""
        ...

    def read(self, image: Image) -> Reading:
        """The text read in ``image`` and each word's box in its pixels, from one pass."""
        ...

    def forget(self) -> None:
        """Drop whatever the engine keeps of text it has read (called after a deletion), at
        once or, during a read, as it ends: never waiting for one."""
        ...

    def close(self) -> None: ...


# NamedTuples, not dataclasses: ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``
# and ``tokenize``), which ``status`` paid for asking ``session()`` (0.39x Python's start).
class Backends(NamedTuple):
    name: str  # "x11", "wlroots" or "gnome"
    probe: Probe
    ax: TextReader
    ocr: OcrEngine
    screen: Screen
    display: str | None  # the X display, or the Wayland socket
    abilities: tuple[str, ...] = ()
    """What this backend can and cannot do on this desktop, one line each, for ``status``."""
    hotkey_problem: str | None = None
    """Why no global pause hotkey can work here (None: pynput may listen)."""

    def close(self) -> None:
        self.probe.close()
        self.ax.close()
        self.ocr.close()


def ocr_engine() -> OcrEngine:
    """Tesseract kept loaded in a worker process (``capture.ocr_worker``: 1.2-2× less CPU
    a window than starting the tesseract program each time, ``python -m bench.ocr``)."""
    from capture.ocr_worker import WorkerOcr

    return WorkerOcr()


class X11Screen:
    """``Screen`` over mss (``capture.screen.grab``) on one X display."""

    def __init__(self, display: str | None) -> None:
        self.display = display

    def grab(self, geometry: Geometry | None) -> tuple[Image, Monitor]:
        from capture import screen

        return screen.grab(geometry, display=self.display)


_TEXT = (
    "text from AT-SPI where the app publishes it (GTK, Qt; Chromium and Electron only when "
    "they see an assistive technology), else OCR"
)
# XDG_CURRENT_DESKTOP values of compositors built on wlroots (or offering its protocols).
WLROOTS_DESKTOPS = ("sway", "hyprland", "river", "wayfire", "labwc", "hikari", "dwl", "qtile")
# XDG_CURRENT_DESKTOP values of GNOME Shell sessions (Ubuntu's and Pop's included) and KDE's.
GNOME_DESKTOPS = ("gnome", "ubuntu", "pop", "gnome-classic")
KDE_DESKTOPS = ("kde", "plasma")


class Session(NamedTuple):
    """What ``backends()`` reads of the session, and what it would choose."""

    wayland: bool
    desktop: str  # XDG_CURRENT_DESKTOP's first entry, or the compositor's own variable
    backend: str | None  # "x11", "wlroots", "gnome", or None with ``refusal``
    refusal: str | None = None


def session(environ: Mapping[str, str], choice: str = "auto") -> Session:
    """The backend for this Linux session (no connection is opened)."""
    desktops = [d.strip().lower() for d in environ.get("XDG_CURRENT_DESKTOP", "").split(":")]
    desktops = [d for d in desktops if d]
    wayland = bool(environ.get("WAYLAND_DISPLAY")) or (
        environ.get("XDG_SESSION_TYPE", "").lower() == "wayland"
    )
    wlroots = bool(environ.get("SWAYSOCK") or environ.get("HYPRLAND_INSTANCE_SIGNATURE")) or any(
        d in WLROOTS_DESKTOPS for d in desktops
    )
    desktop = desktops[0] if desktops else ""
    if not desktop and environ.get("SWAYSOCK"):
        desktop = "sway"
    elif not desktop and environ.get("HYPRLAND_INSTANCE_SIGNATURE"):
        desktop = "hyprland"
    display = environ.get("DISPLAY")
    if choice == "x11":
        if not display:
            return Session(wayland, desktop, None, "capture_backend is x11 but DISPLAY is not set")
        return Session(wayland, desktop, "x11")
    if choice in ("wlroots", "gnome"):
        if not environ.get("WAYLAND_DISPLAY"):
            return Session(
                wayland,
                desktop,
                None,
                f"capture_backend is {choice} but WAYLAND_DISPLAY is not set",
            )
        return Session(wayland, desktop, choice)
    if not wayland:
        if display:
            return Session(False, desktop, "x11")
        return Session(
            False,
            desktop,
            None,
            "no display to capture: neither DISPLAY nor WAYLAND_DISPLAY is set "
            "(not a graphical session)",
        )
    if not wlroots and any(d in KDE_DESKTOPS for d in desktops):
        return Session(
            True,
            desktop,
            None,
            "capture in a KDE Plasma Wayland session is not supported yet: Plasma gives no "
            "program the active window or silent screenshots (it needs the desktop portal's "
            "screen cast, which this version does not ask for); log in to an X11 session, or "
            "set capture_backend to x11 to record only XWayland windows",
        )
    if not environ.get("WAYLAND_DISPLAY"):
        return Session(
            True, desktop, None, "a Wayland session without WAYLAND_DISPLAY: nothing to connect to"
        )
    if not wlroots and any(d in GNOME_DESKTOPS for d in desktops):
        return Session(True, desktop, "gnome")
    return Session(True, desktop, "wlroots")


def backends(
    *,
    environ: Mapping[str, str] | None = None,
    system: str | None = None,
    choice: str = "auto",
) -> Backends:
    """The backends for this session (``environ``/``system`` default to the real ones;
    ``choice`` is the config's ``capture_backend``)."""
    env = os.environ if environ is None else environ
    system = system or sys.platform
    if system == "darwin":
        raise CaptureError(
            "capture on macOS is not supported yet: this version of Backscroll captures "
            "Linux X11, wlroots (sway, Hyprland, river) and GNOME sessions only"
        )
    if system in ("win32", "cygwin"):
        raise CaptureError(
            "capture on Windows is not supported yet: this version of Backscroll captures "
            "Linux X11, wlroots (sway, Hyprland, river) and GNOME sessions only"
        )
    if not system.startswith("linux"):
        raise CaptureError(
            f"capture on {system} is not supported: only Linux X11, wlroots and GNOME sessions are"
        )
    found = session(env, choice)
    if found.backend is None:
        raise CaptureError(found.refusal or "no capture backend for this session")

    from capture.ax import AxReader

    ax = AxReader(env.get("DBUS_SESSION_BUS_ADDRESS"))
    if found.backend == "wlroots":
        return _wlroots(env, found, ax)
    if found.backend == "gnome":
        return _gnome(env, ax)

    from capture.probe import X11Probe

    display = env["DISPLAY"]
    abilities = [
        "active window and window rectangles from X11 (EWMH), pixels through mss",
        _TEXT,
    ]
    if found.wayland:
        abilities.insert(
            0,
            "XWayland only (capture_backend x11 in a Wayland session): native Wayland "
            "windows are not seen",
        )
    return Backends(
        "x11", X11Probe(display), ax, ocr_engine(), X11Screen(display), display, tuple(abilities)
    )


def _wlroots(env: Mapping[str, str], found: Session, ax: AxReader) -> Backends:
    from capture.wlroots import WlrootsProbe

    wayland = env["WAYLAND_DISPLAY"]
    sway = env.get("SWAYSOCK") or env.get("I3SOCK") or None
    try:
        probe = WlrootsProbe(wayland, sway_socket=sway)
    except BaseException:
        ax.close()
        raise
    abilities = [
        f"Wayland ({found.desktop or 'a wlroots compositor'}): active window from "
        "wlr-foreign-toplevel, pixels from wlr-screencopy of the window's output",
    ]
    if probe.capabilities.geometry:
        abilities.append("window rectangles and pids from sway's IPC")
        abilities.append(_TEXT)
    else:
        abilities.append(
            "no window rectangles (sway's IPC is not there): the whole output is captured, "
            "denied windows beside the active one cannot be blacked out, and text comes from "
            "OCR (no pid for AT-SPI)"
        )
    if env.get("DISPLAY"):
        abilities.append("XWayland windows are seen as the compositor lists them")
    return Backends(
        "wlroots",
        probe,
        ax,
        ocr_engine(),
        probe,
        wayland,
        tuple(abilities),
        hotkey_problem=(
            "Wayland gives programs no global key grab: bind a key in the compositor to "
            "`backscroll pause --toggle`"
        ),
    )


def _gnome(env: Mapping[str, str], ax: AxReader) -> Backends:
    from capture.gnome import GnomeShell

    bus = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not bus:
        ax.close()
        raise CaptureError(
            "a GNOME session without DBUS_SESSION_BUS_ADDRESS: no way to GNOME Shell"
        )
    x11 = _xwayland(env.get("DISPLAY"))
    try:
        shell = GnomeShell(ax, bus, x11)
    except BaseException:
        ax.close()
        if x11 is not None:
            x11.close()
        raise
    abilities = [
        "GNOME on Wayland: the active window from AT-SPI (Wayland apps that publish no AT-SPI "
        "tree, such as foot, Alacritty and kitty, are not recorded), pixels from Mutter's "
        "screen cast (GNOME shows its screen-cast indicator)",
        "no window rectangles: the frame is the whole desktop, and a denied window open "
        "anywhere blacks out the whole frame (its text still comes from AT-SPI)",
        _TEXT,
    ]
    if x11 is not None:
        abilities.insert(1, "XWayland windows from X11, with their rectangles")
    return Backends(
        "gnome",
        shell,
        ax,
        ocr_engine(),
        shell,
        env["WAYLAND_DISPLAY"],
        tuple(abilities),
        hotkey_problem=(
            "Wayland gives programs no global key grab: add a GNOME keyboard shortcut "
            "(Settings → Keyboard → Custom Shortcuts) running `backscroll pause --toggle`"
        ),
    )


def _xwayland(display: str | None) -> X11Probe | None:
    """The X11 probe of GNOME's XWayland, None without one (no X clients are then seen)."""
    if not display:
        return None
    from capture.probe import X11Probe

    try:
        return X11Probe(display)
    except CaptureError:
        return None
