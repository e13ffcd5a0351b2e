"""The GNOME backend (GNOME Shell on Wayland): AT-SPI for the windows, Mutter's screen cast
for the pixels.

    shell = GnomeShell(AxReader(bus), bus)
    front = shell.frontmost()            # the ACTIVE window on AT-SPI, or None
    image, monitor = shell.grab(front.geometry)   # the whole desktop

GNOME gives no ordinary program the active window (``org.gnome.Shell.Introspect`` refuses,
``Shell.Eval`` is off) nor a silent screenshot (``org.gnome.Shell.Screenshot`` serves only
its own tools). What it does give:

- **Windows, from the accessibility bus**: every app that publishes an AT-SPI tree (GTK,
  Qt, Firefox, LibreOffice, GNOME Terminal; Chromium and Electron with
  ``--force-renderer-accessibility``) lists its top-level windows, and the focused one is in
  state ACTIVE. Its title is the window's accessible name, its app the application's, its
  pid the bus connection's. No window has a position.
- **XWayland windows, from X11** (when ``DISPLAY`` is set): Mutter keeps
  ``_NET_ACTIVE_WINDOW`` for its X clients and clears it while a Wayland window has the
  focus, so when AT-SPI names no ACTIVE window the X11 probe is asked, and an X client
  (xterm) is recorded with its rectangle. A native Wayland app that publishes nothing
  (foot, Alacritty, kitty) is never in front as far as this backend knows: while it has
  the focus nothing is captured.
- **Pixels, from Mutter's ScreenCast D-Bus API** (``org.gnome.Mutter.ScreenCast``, the
  service GNOME's own desktop portal and remote desktop use): one session records the
  whole desktop (the logical monitors' bounding box, ``RecordArea``) into a PipeWire
  stream. Each grab connects GStreamer's ``pipewiresrc`` (PyGObject) to that stream, takes
  the first frame Mutter renders for the new consumer, and disconnects: nothing is streamed
  between grabs, so an idle desktop costs nothing. It asks the person nothing; GNOME shows
  its screen-cast indicator in the top bar while the daemon runs, which is honest.
  The portal's ScreenCast would ask the person to pick a screen once and persist the grant
  (``persist_mode`` 2), but yields the same PipeWire stream from the same Mutter API; it
  is the way for KDE Plasma, which this version does not support.

Without window rectangles the frame is the whole desktop, and a denied window open
anywhere (SHOWING on AT-SPI) blacks out the whole frame: the daemon's masking gets the
desktop as that window's rectangle. Text then comes from AT-SPI only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from base.errors import CaptureError
from capture.probe import Frontmost, Geometry, VisibleWindow
from capture.screen import Monitor

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus
    from PIL.Image import Image

    from capture.ax import AxReader, AxWindow, Ref
    from capture.probe import X11Probe

log = logging.getLogger(__name__)

T = TypeVar("T")

SCREEN_CAST = "org.gnome.Mutter.ScreenCast"
_DBUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
DISPLAY_CONFIG = "org.gnome.Mutter.DisplayConfig"
_WAIT_S = 5.0  # a frame or a D-Bus answer that has not come by then is not coming
# AT-SPI windows are numbered above X window ids (29 bits), so the two never meet.
_AX_IDS = 1 << 40
_LAYOUT_PHYSICAL = 2  # DisplayConfig's layout-mode: monitor sizes in pixels, not logical
# Caps pipewiresrc is asked for: shared memory (not DMA-BUF), 32-bit pixels Pillow reads.
_CAPS = "video/x-raw,format={BGRx,BGRA,RGBx,RGBA}"
_RAW_MODES = {"BGRx": "BGRX", "BGRA": "BGRA", "RGBx": "RGBX", "RGBA": "RGBA"}
INSTALL = (
    "the GNOME backend needs GStreamer's PipeWire source and PyGObject: "
    "apt-get install gstreamer1.0-pipewire gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0, "
    "and pip install 'backscroll[gnome]'"
)


class GnomeShell:
    """``Probe`` and ``Screen`` of a GNOME Shell Wayland session; see the module docstring."""

    def __init__(self, ax: AxReader, session_bus: str, x11: X11Probe | None = None) -> None:
        self._ax = ax
        self._x11 = x11
        self._ids: dict[Ref, int] = {}
        self._last: AxWindow | None = None
        self._cast = ScreenCast(session_bus)
        try:
            self.desktop = self._cast.desktop()
        except BaseException:
            self._cast.close()
            raise

    def frontmost(self) -> Frontmost | None:
        if self._cast.lost:
            # Its windows went with it; AT-SPI would only say that none is active.
            raise CaptureError("GNOME Shell went away")
        window = self._ax.still_active(self._last) if self._last else None
        if window is None:
            window = next((w for w in self._ax.windows() if w.active), None)
        self._last = window
        if window is None:
            return self._x11.frontmost() if self._x11 else None
        return Frontmost(
            window.app, window.title, window.pid or None, self._id(window), self.desktop
        )

    def visible_windows(self) -> list[VisibleWindow]:
        """Every SHOWING window, each where it might be: anywhere on the desktop; and the
        XWayland windows where X11 says they are."""
        seen = [
            VisibleWindow(self._id(w), w.app, w.title, self.desktop) for w in self._ax.windows()
        ]
        return seen + (self._x11.visible_windows() if self._x11 else [])

    def grab(self, geometry: Geometry | None) -> tuple[Image, Monitor]:
        """The whole desktop (``geometry`` is always within it)."""
        image, self.desktop = self._cast.grab()
        scale = image.width / self.desktop.width
        left, top, width, height = self.desktop
        return image, Monitor(1, left, top, width, height, scale)

    def close(self) -> None:
        self._cast.close()
        if self._x11 is not None:
            self._x11.close()

    def _id(self, window: AxWindow) -> int:
        """A number for the window's life: two windows of one app with one title are two."""
        return self._ids.setdefault(window.ref, _AX_IDS + len(self._ids))


class ScreenCast:
    """One Mutter screen-cast session of the whole desktop, on a connection kept open (Mutter
    ends a session whose caller hangs up), and the GStreamer pipeline that reads it.
    ``pipewire_socket``: the PipeWire daemon's socket when it is not in this process's
    runtime folder (a test reading another user's desktop)."""

    def __init__(self, session_bus: str, *, pipewire_socket: str | None = None) -> None:
        self._address = session_bus
        self._pipewire_socket = pipewire_socket
        self._socket: socket.socket | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="backscroll-screencast", daemon=True
        )
        self._thread.start()
        self._bus: MessageBus | None = None
        self._session: str | None = None
        self._layout_seen: tuple[int, Geometry] | None = None
        self.node: int | None = None  # the PipeWire node of the stream being recorded
        self.lost = False  # GNOME Shell left the bus (it ended, or crashed) since we met it
        self._pipeline: Any = None
        self._gst: Any = _gstreamer()

    def desktop(self) -> Geometry:
        """The logical monitors' bounding box."""
        return self._run(self._layout())[1]

    def grab(self) -> tuple[Image, Geometry]:
        from PIL import Image

        layout = self._run(self._layout())
        if layout != self._layout_seen or self._pipeline is None:
            # A monitor came, went or moved: record the new desktop.
            self.node = self._run(self._record(layout[1]))
            self._layout_seen = layout
            self._pipeline = self._pipeline_for(self.node)
        Gst = self._gst
        pipeline = self._pipeline
        try:
            if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
                raise CaptureError("GNOME's screen cast refused the connection")
            sample = pipeline.get_by_name("sink").emit("try-pull-sample", int(_WAIT_S * 1e9))
            if sample is None:
                self._layout_seen = None  # record again next time: the stream may be gone
                raise CaptureError(f"GNOME's screen cast sent no frame in {_WAIT_S:.0f} s")
            caps = sample.get_caps().get_structure(0)
            size = (caps.get_value("width"), caps.get_value("height"))
            mode = _RAW_MODES[caps.get_value("format")]
            buffer = sample.get_buffer()
            ok, mapped = buffer.map(Gst.MapFlags.READ)
            if not ok:
                raise CaptureError("GNOME's screen cast frame could not be read")
            try:
                image = Image.frombuffer("RGB", size, mapped.data, "raw", mode, 0, 1).copy()
            finally:
                buffer.unmap(mapped)
        finally:
            pipeline.set_state(Gst.State.NULL)
        return image, layout[1]

    def close(self) -> None:
        self._close_pipeline()
        with contextlib.suppress(Exception):
            self._run(self._hang_up(disconnect=True))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(2.0)
        self._loop.close()

    # ------------------------------------------------------------------ GStreamer

    def _pipeline_for(self, node: int) -> Any:
        Gst = self._gst
        self._close_pipeline()
        try:
            pipeline = Gst.parse_launch(
                f"pipewiresrc name=source path={node} ! {_CAPS} ! "
                "appsink name=sink max-buffers=1 drop=true sync=false"
            )
        except Exception as exc:  # GLib.Error: no pipewiresrc element
            raise CaptureError(f"{INSTALL} ({exc})") from None
        if self._pipewire_socket:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._socket.connect(self._pipewire_socket)
            except OSError as exc:
                raise CaptureError(f"PipeWire is not there: {exc.strerror}") from None
            pipeline.get_by_name("source").set_property("fd", self._socket.fileno())
        return pipeline

    def _close_pipeline(self) -> None:
        if self._pipeline is not None:
            self._pipeline.set_state(self._gst.State.NULL)
            self._pipeline = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    # ------------------------------------------------------------------ D-Bus

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(work, _WAIT_S), self._loop)
        try:
            return future.result(_WAIT_S + 1)
        except CaptureError:
            raise
        except Exception as exc:
            future.cancel()
            raise CaptureError(
                f"GNOME Shell's screen cast does not answer ({type(exc).__name__}: {exc})"
            ) from None

    async def _connect(self) -> MessageBus:
        from dbus_fast.aio import MessageBus

        if self._bus is None or not self._bus.connected:
            bus = await MessageBus(bus_address=self._address).connect()
            self._bus, self._session = bus, None

            def owner_changed(message: Any) -> None:
                if message.member == "NameOwnerChanged" and message.body[0] == SCREEN_CAST:
                    self.lost = True

            bus.add_message_handler(owner_changed)
            rule = f"type='signal',member='NameOwnerChanged',arg0='{SCREEN_CAST}'"
            await self._call(*_DBUS, "AddMatch", "s", rule)
        return self._bus

    async def _call(
        self, destination: str, path: str, interface: str, member: str, sig: str = "", *body: Any
    ) -> list[Any]:
        from capture.ax import CallError, call

        bus = await self._connect()
        try:
            return await call(bus, destination, path, interface, member, sig, body)
        except CallError as exc:
            raise CaptureError(f"GNOME Shell refused {member} ({exc.name})") from None

    async def _layout(self) -> tuple[int, Geometry]:
        """DisplayConfig's serial and the logical monitors' bounding box."""
        serial, monitors, logical, properties = await self._call(
            DISPLAY_CONFIG, "/org/gnome/Mutter/DisplayConfig", DISPLAY_CONFIG, "GetCurrentState"
        )
        physical = properties.get("layout-mode") is not None and (
            properties["layout-mode"].value == _LAYOUT_PHYSICAL
        )
        sizes = {spec[0]: _current_size(modes) for spec, modes, _props in monitors}
        boxes = []
        for x, y, scale, _transform, _primary, specs, _props in logical:
            width, height = sizes.get(specs[0][0], (0, 0)) if specs else (0, 0)
            if not physical:  # logical layout: a monitor at scale 2 covers half its pixels
                width, height = round(width / scale), round(height / scale)
            boxes.append((x, y, x + width, y + height))
        if not boxes:
            raise CaptureError("GNOME Shell reports no monitor")
        left, top = min(b[0] for b in boxes), min(b[1] for b in boxes)
        right, bottom = max(b[2] for b in boxes), max(b[3] for b in boxes)
        return int(serial), Geometry(left, top, right - left, bottom - top)

    async def _record(self, area: Geometry) -> int:
        """A new session recording ``area``, started; returns its PipeWire node id."""
        from dbus_fast import Variant

        await self._hang_up()
        path = "/org/gnome/Mutter/ScreenCast"
        # is-recording: the screen is recorded, not shared with someone (GNOME versions that
        # know the flag say so in their indicator).
        (session,) = await self._call(
            SCREEN_CAST,
            path,
            SCREEN_CAST,
            "CreateSession",
            "a{sv}",
            {"is-recording": Variant("b", True)},
        )
        self._session = session
        (stream,) = await self._call(
            SCREEN_CAST,
            session,
            f"{SCREEN_CAST}.Session",
            "RecordArea",
            "iiiia{sv}",
            *area,
            {"cursor-mode": Variant("u", 0)},  # hidden: the pointer is not the person's text
        )
        bus = await self._connect()
        node: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def added(message: Any) -> None:
            if (
                message.path == stream
                and message.member == "PipeWireStreamAdded"
                and not node.done()
            ):
                node.set_result(int(message.body[0]))

        bus.add_message_handler(added)
        try:
            rule = f"type='signal',path='{stream}',member='PipeWireStreamAdded'"
            await self._call(*_DBUS, "AddMatch", "s", rule)
            await self._call(SCREEN_CAST, session, f"{SCREEN_CAST}.Session", "Start")
            return await node
        finally:
            bus.remove_message_handler(added)

    async def _hang_up(self, *, disconnect: bool = False) -> None:
        if self._session is not None and self._bus is not None and self._bus.connected:
            session, self._session = self._session, None
            with contextlib.suppress(CaptureError):
                await self._call(SCREEN_CAST, session, f"{SCREEN_CAST}.Session", "Stop")
        if disconnect and self._bus is not None:
            self._bus.disconnect()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._bus.wait_for_disconnect(), 1.0)
            self._bus = None


def _current_size(modes: list[Any]) -> tuple[int, int]:
    """The width and height of a monitor's current mode ((0, 0) when none is current)."""
    for _id, width, height, _rate, _scale, _scales, props in modes:
        current = props.get("is-current")
        if current is not None and current.value:
            return int(width), int(height)
    return 0, 0


_gst_lock = threading.Lock()


def _gstreamer() -> Any:
    """GStreamer, initialised once (CaptureError saying what to install when it cannot)."""
    with _gst_lock:
        try:
            import gi

            gi.require_version("Gst", "1.0")
            from gi.repository import Gst
        except (ImportError, ValueError) as exc:
            raise CaptureError(f"{INSTALL} ({exc})") from None
        if not Gst.is_initialized():
            Gst.init(None)
        if Gst.ElementFactory.find("pipewiresrc") is None:
            raise CaptureError(INSTALL)
        return Gst
