"""The frontmost-window probe for X11, on one python-xlib connection.

``X11Probe.frontmost()`` answers "which app, which window title, which pid, where?" in a
handful of X round trips; the daemon calls it every ``poll_seconds``. On the test desktop
(Xvfb, openbox, a 2-core machine shared with other work) one probe took 0.3 ms at the
median and 5 ms at p99 (bench/results/capture.txt), so polling every second costs
nothing measurable.

The active window is the window manager's ``_NET_ACTIVE_WINDOW``. Without a window manager
(or with one that does not set it) the X input focus is used instead, walked up to the
top-level client window, the one carrying ``WM_STATE`` (what ``xprop``'s XmuClientWindow
does).

A window can vanish between two requests: X errors (BadWindow and friends) make the probe
return None or skip that window. A display that goes away raises ``CaptureError``.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from base.errors import CaptureError

if TYPE_CHECKING:
    from Xlib.display import Display
    from Xlib.xobject.drawable import Window

T = TypeVar("T")
log = logging.getLogger(__name__)

# Property reads ask for this many 32-bit units at once: 1 KiB holds any sane title, so a
# long title does not cost python-xlib's second round trip (its default is 40 bytes).
_PROPERTY_UNITS = 256
# How far below a frame window the client is searched for: openbox puts the client one
# level below its frame; reparenting WMs with extra wrappers use two or three.
_CLIENT_SEARCH_DEPTH = 4

_ATOMS = (
    "_NET_ACTIVE_WINDOW",
    "_NET_CLIENT_LIST",
    "_NET_CLIENT_LIST_STACKING",
    "_NET_FRAME_EXTENTS",
    "_NET_WM_NAME",
    "_NET_WM_PID",
    "UTF8_STRING",
    "WM_CLASS",
    "WM_NAME",
    "WM_STATE",
)


class Geometry(NamedTuple):
    """A rectangle in root-window (whole-desktop) coordinates."""

    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


class Frontmost(NamedTuple):
    """The focused top-level window. ``geometry`` is its client area, without the frame."""

    app: str  # the class part of WM_CLASS ("XTerm", "Zenity", "firefox")
    title: str
    pid: int | None  # _NET_WM_PID, when the client sets it
    window_id: int
    geometry: Geometry


class VisibleWindow(NamedTuple):
    """A mapped top-level window. ``geometry`` includes the frame (title bar, borders)."""

    window_id: int
    app: str
    title: str
    geometry: Geometry


class X11Probe:
    """Frontmost and visible windows of one X display (``None``: ``$DISPLAY``)."""

    def __init__(self, display: str | None = None) -> None:
        from Xlib import display as xdisplay
        from Xlib import error

        failure = ""
        # python-xlib leaks the socket of a failed TCP fallback; it is closed when the
        # exception's traceback goes, which must not surface as a ResourceWarning.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                self._display: Display = xdisplay.Display(display)
            except (error.DisplayError, OSError) as exc:
                failure = str(exc)
        if failure:
            raise CaptureError(f"cannot open the X display {display or '$DISPLAY'}: {failure}")
        self._root = self._display.screen().root
        self._atom = {name: self._display.intern_atom(name) for name in _ATOMS}

    def close(self) -> None:
        from Xlib import error

        # A display that is already gone has nothing left to close.
        with contextlib.suppress(error.ConnectionClosedError, OSError):
            self._display.close()

    def frontmost(self) -> Frontmost | None:
        """The focused window, or None when nothing is focused (or it just vanished)."""
        return self._guard(self._frontmost, None)

    def visible_windows(self) -> list[VisibleWindow]:
        """Mapped top-level client windows, bottom to top, on the current desktop."""
        return self._guard(self._visible_windows, [])

    def _guard(self, read: Callable[[], T], vanished: T) -> T:
        from Xlib import error

        try:
            return read()
        except error.XError as exc:
            log.debug("a window vanished during the probe: %s", type(exc).__name__)
            return vanished
        except (error.ConnectionClosedError, OSError) as exc:
            raise CaptureError(f"the X display went away: {exc}") from None

    # ------------------------------------------------------------------ reads

    def _frontmost(self) -> Frontmost | None:
        client = self._active_window()
        if client is None:
            return None
        app, title = self._app(client), self._title(client)
        return Frontmost(app, title, self._pid(client), client.id, self._client_geometry(client))

    def _visible_windows(self) -> list[VisibleWindow]:
        from Xlib import X, error

        ids = self._cardinals(self._root, "_NET_CLIENT_LIST_STACKING")
        if ids is None:
            ids = self._cardinals(self._root, "_NET_CLIENT_LIST")
        if ids is None:  # no EWMH window manager: the root's children, bottom to top
            clients = (self._client_of(child) for child in self._root.query_tree().children)
            ids = [client.id for client in clients if client is not None]
        found = []
        for window_id in ids:
            window = self._display.create_resource_object("window", window_id)
            try:
                if window.get_attributes().map_state != X.IsViewable:
                    continue  # minimised, or on another virtual desktop
                geometry = self._outer_geometry(window)
                found.append(
                    VisibleWindow(window_id, self._app(window), self._title(window), geometry)
                )
            except error.XError:
                continue  # closed while we looked
        return found

    def _active_window(self) -> Window | None:
        """The active top-level client: the window manager's choice, else the focus's."""
        from Xlib import X

        active = self._cardinals(self._root, "_NET_ACTIVE_WINDOW")
        if active and active[0]:
            return self._client_of(self._display.create_resource_object("window", active[0]))
        focus = self._display.get_input_focus().focus
        if isinstance(focus, int) or focus.id in (self._root.id, X.NONE, X.PointerRoot):
            return None
        client = self._client_of(focus)
        # Override-redirect windows (menus, tooltips, a window manager's own focus holder)
        # are never an application's main window.
        if client is None or client.get_attributes().override_redirect:
            return None
        return client

    def _client_of(self, window: Window) -> Window | None:
        """The top-level client window holding ``window`` (the window itself, its ancestor
        with WM_STATE, or the client inside a window manager's frame)."""
        current = window
        while True:
            if self._has_wm_state(current):
                return current
            parent = current.query_tree().parent
            if isinstance(parent, int) or parent.id == self._root.id:
                break  # ``current`` is a direct child of the root: a frame, or unmanaged
            current = parent
        return self._client_below(current, _CLIENT_SEARCH_DEPTH) or current

    def _client_below(self, window: Window, depth: int) -> Window | None:
        if depth == 0:
            return None
        children = window.query_tree().children
        for child in children:
            if self._has_wm_state(child):
                return child
        for child in children:
            if found := self._client_below(child, depth - 1):
                return found
        return None

    # ------------------------------------------------------------- properties

    def _property(self, window: Window, name: str) -> Any:
        from Xlib import X

        prop = window.get_full_property(self._atom[name], X.AnyPropertyType, _PROPERTY_UNITS)
        return None if prop is None else prop.value

    def _cardinals(self, window: Window, name: str) -> list[int] | None:
        value = self._property(window, name)
        return None if value is None else [int(item) for item in value]

    def _has_wm_state(self, window: Window) -> bool:
        return self._property(window, "WM_STATE") is not None

    def _title(self, window: Window) -> str:
        for name in ("_NET_WM_NAME", "WM_NAME"):
            value = self._property(window, name)
            if value:
                return _text(value)
        return ""

    def _app(self, window: Window) -> str:
        value = self._property(window, "WM_CLASS")
        if not value:
            return ""
        # WM_CLASS is "instance\0Class\0"; the class names the application.
        parts = [part for part in _text(value).split("\0") if part]
        return parts[-1] if parts else ""

    def _pid(self, window: Window) -> int | None:
        value = self._cardinals(window, "_NET_WM_PID")
        return value[0] if value else None

    def _client_geometry(self, window: Window) -> Geometry:
        size = window.get_geometry()
        origin = self._root.translate_coords(window, 0, 0)
        return Geometry(origin.x, origin.y, size.width, size.height)

    def _outer_geometry(self, window: Window) -> Geometry:
        inner = self._client_geometry(window)
        extents = self._cardinals(window, "_NET_FRAME_EXTENTS")
        if not extents or len(extents) != 4:
            return inner
        left, right, top, bottom = extents
        return Geometry(
            inner.x - left, inner.y - top, inner.width + left + right, inner.height + top + bottom
        )


def _text(value: bytes | str) -> str:
    """A text property's value as str.

    ICCCM says STRING is Latin-1, but clients (xdotool, many toolkits) put UTF-8 in STRING
    and WM_NAME as well; valid UTF-8 is almost never meaningful Latin-1, so UTF-8 is tried
    first.
    """
    if isinstance(value, str):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")
