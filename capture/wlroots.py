"""The wlroots backend (sway, Hyprland, river, …): one Wayland connection, in process.

    probe = WlrootsProbe("wayland-1", sway_socket="/run/user/1000/sway-ipc.1000.42.sock")
    front = probe.frontmost()                 # from wlr-foreign-toplevel events
    image, monitor = probe.grab(front.geometry)   # wlr-screencopy of the window's output

- **The frontmost window** is the toplevel whose ``activated`` state the compositor last
  sent (``zwlr_foreign_toplevel_manager_v1``). Each probe is one round trip, which also
  dispatches whatever events arrived since (new windows, titles, focus, closes), so the
  daemon sees switches exactly as it does on X11. Each toplevel handle gets a number for
  its life: two windows with the same app and title are two windows to the trigger.
- **Geometry and pid**: the protocol gives neither. On sway they come from its IPC tree
  (``capture.swayipc``); the window ids are then sway's con ids, so the active window and
  the visible windows beside it (masked when denied) share one id space. Elsewhere the
  window's rectangle is its whole output and no other window can be masked: ``capabilities``
  says so for ``status``.
- **Pixels**: ``zwlr_screencopy_manager_v1.capture_output`` of the output that shows the
  window (``capture.screen.frame_for``) into a shared-memory buffer (one per size, kept
  between frames), converted by Pillow in C. The image has the output's pixels (a scale-2
  output gives twice the logical size), and ``Monitor.scale`` maps logical coordinates onto
  it. A window across outputs is captured whole: each output it spans is copied and pasted
  at its place in their bounding rectangle (index 0), at the finest scale among them; what
  no output shows stays black. Outputs come and go with the registry's events, read at
  every probe and grab.

The connection is not thread-safe: one lock serialises the probe loop and the worker. A
compositor that goes away raises ``CaptureError``; the daemon reconnects.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import mmap
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from base.errors import CaptureError
from capture import screen
from capture.probe import Frontmost, Geometry, VisibleWindow
from capture.screen import Monitor

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.swayipc import SwayWindow

log = logging.getLogger(__name__)

_ACTIVATED = 2  # zwlr_foreign_toplevel_handle_v1.state.activated
# Window ids of toplevels that sway's tree does not hold (another compositor, or a window
# sway has not placed yet) live above sway's con ids, so the two never meet.
_HANDLE_IDS = 1 << 40
# wl_shm formats: their bytes in memory, little-endian, as Pillow's raw modes name them.
_RAW_MODES = {0: "BGRA", 1: "BGRX", 0x34324241: "RGBA", 0x34324258: "RGBX"}
_FLAG_Y_INVERT = 1
_WAIT_S = 5.0  # a screencopy that has not answered by then is not coming
# Shared-memory buffers kept, one per size of output: more sizes than this are outputs that
# came and went, whose buffers are let go, oldest first.
_BUFFERS_KEPT = 4


@dataclass
class _Toplevel:
    number: int
    app: str = ""
    title: str = ""
    activated: bool = False
    outputs: list[Any] = field(default_factory=list)
    pending: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Output:
    proxy: Any
    name: str = ""
    x: int = 0
    y: int = 0
    width: int = 0
    height: int = 0
    xdg: Any = None  # its zxdg_output_v1: the logical position, size and name


@dataclass
class _Shm:
    """A shared-memory buffer of one size and format, reused by every grab of that size."""

    size: tuple[int, int, int, int]  # width, height, stride, format
    fd: int
    memory: mmap.mmap
    pool: Any
    buffer: Any

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.buffer.destroy()
            self.pool.destroy()
        self.memory.close()
        os.close(self.fd)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this compositor lets the backend do, for ``status``."""

    active_window: bool
    pixels: bool
    geometry: bool  # window rectangles, pids and masking beside the active window


class WlrootsProbe:
    """The frontmost window, the visible windows and grabs on one wlroots compositor."""

    def __init__(self, display: str | None, *, sway_socket: str | None = None) -> None:
        from pywayland.client.display import Display
        from pywayland.protocol.wayland.wl_output import WlOutput
        from pywayland.protocol.wayland.wl_shm import WlShm
        from pywayland.protocol.xdg_output_unstable_v1.zxdg_output_manager_v1 import (
            ZxdgOutputManagerV1,
        )

        from capture.wayland_protocols import load

        toplevel_protocol, screencopy_protocol = load()
        self._lock = threading.Lock()
        self._sway = sway_socket
        self._toplevels: dict[Any, _Toplevel] = {}
        self._numbers = 0
        self._outputs: dict[int, _Output] = {}  # by registry name
        self._buffers: dict[tuple[int, int, int, int], _Shm] = {}
        self._gone = False
        try:
            self._display = Display(display)
            self._display.connect()
        except Exception as exc:
            raise CaptureError(
                f"cannot connect to the Wayland compositor {display or '$WAYLAND_DISPLAY'}: {exc}"
            ) from None
        wanted = {
            "wl_shm": (WlShm, 1),
            "zxdg_output_manager_v1": (ZxdgOutputManagerV1, 3),
            "zwlr_foreign_toplevel_manager_v1": (
                toplevel_protocol.ZwlrForeignToplevelManagerV1,
                3,
            ),
            "zwlr_screencopy_manager_v1": (screencopy_protocol.ZwlrScreencopyManagerV1, 3),
        }
        self._globals: dict[str, Any] = {}

        def announced(registry: Any, name: int, interface: str, version: int) -> None:
            if interface == "wl_output":
                proxy = registry.bind(name, WlOutput, min(version, 3))
                self._outputs[name] = _Output(proxy)
                self._describe_output(self._outputs[name])
            elif interface in wanted:
                kind, highest = wanted[interface]
                self._globals[interface] = registry.bind(name, kind, min(version, highest))

        def removed(registry: Any, name: int) -> None:
            output = self._outputs.pop(name, None)
            if output is not None:
                with contextlib.suppress(Exception):
                    if output.xdg is not None:
                        output.xdg.destroy()
                    output.proxy.release()

        self._registry = self._display.get_registry()
        self._registry.dispatcher["global"] = announced
        self._registry.dispatcher["global_remove"] = removed
        self._roundtrip()
        missing = [name for name in wanted if name not in self._globals]
        if "zwlr_foreign_toplevel_manager_v1" in missing or "zwlr_screencopy_manager_v1" in missing:
            self.close()
            raise CaptureError(
                "this Wayland compositor offers no "
                + " and no ".join(n for n in missing if n.startswith("zwlr"))
                + ": Backscroll needs both to see the active window and its pixels"
            )
        if missing:
            self.close()
            raise CaptureError(f"this Wayland compositor offers no {', '.join(missing)}")
        for output in self._outputs.values():
            self._describe_output(output)
        self._globals["zwlr_foreign_toplevel_manager_v1"].dispatcher["toplevel"] = self._new
        self._roundtrip()
        self._roundtrip()  # the toplevels' own events follow their announcement

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(active_window=True, pixels=True, geometry=self._sway is not None)

    def close(self) -> None:
        with self._lock:
            for buffer in self._buffers.values():
                buffer.close()
            self._buffers.clear()
            with contextlib.suppress(Exception):
                self._display.disconnect()
            # pywayland keeps every registry in a class-level table (see ``_new``).
            from pywayland.protocol.wayland.wl_registry import WlRegistry

            table: dict[Any, Any] = WlRegistry.registry  # type: ignore[attr-defined]
            for pointer, registry in list(table.items()):
                if registry is self._registry:
                    del table[pointer]

    # ------------------------------------------------------------------ probe

    def frontmost(self) -> Frontmost | None:
        with self._lock:
            self._roundtrip()
            active = [t for t in self._toplevels.values() if t.activated]
            if not active:
                return None
            top = active[-1]
            outputs = [o for o in self._outputs.values() if o.proxy in top.outputs]
        window = self._sway_match(top)
        if window is not None:
            return Frontmost(top.app, top.title, window.pid, window.con_id, Geometry(*window.rect))
        output = outputs[0] if outputs else self._first_output()
        geometry = Geometry(output.x, output.y, output.width, output.height)
        return Frontmost(top.app, top.title, None, _HANDLE_IDS + top.number, geometry)

    def visible_windows(self) -> list[VisibleWindow]:
        """The windows sway shows (tiled, then floating); none without sway's IPC."""
        if self._sway is None:
            return []
        from capture import swayipc

        return [
            VisibleWindow(w.con_id, w.app, w.title, Geometry(*w.frame))
            for w in swayipc.windows(self._sway)
            if w.visible
        ]

    def _sway_match(self, top: _Toplevel) -> SwayWindow | None:
        """The view in sway's tree that is this toplevel: the focused one when its app and
        title agree, else the first visible one that has them."""
        if self._sway is None:
            return None
        from capture import swayipc

        found = [w for w in swayipc.windows(self._sway) if (w.app, w.title) == (top.app, top.title)]
        for window in sorted(found, key=lambda w: (not w.focused, not w.visible)):
            return window
        return None

    # ------------------------------------------------------------------ pixels

    def grab(self, geometry: Geometry | None) -> tuple[Image, Monitor]:
        """What ``capture.screen.frame_for`` chooses for ``geometry`` (the first output when
        None), as RGB: one output, or the outputs a window spans pasted side by side."""
        from PIL import Image

        with self._lock:
            self._roundtrip()
            outputs = sorted(
                (o for o in self._outputs.values() if o.width and o.height),
                key=lambda o: (o.x, o.y),
            )
            monitors = [
                Monitor(n, o.x, o.y, o.width, o.height) for n, o in enumerate(outputs, start=1)
            ]
            frame = screen.frame_for(monitors, geometry)
            wanted = [
                o
                for o, m in zip(outputs, monitors, strict=True)
                if m.index == frame.index or (frame.index == 0 and min(screen.shared(m, frame)) > 0)
            ]
            copies = [(output, self._image(output)) for output in wanted]
        if frame.index:
            ((output, image),) = copies
            scale = image.width / output.width
            return image, dataclasses.replace(frame, scale=scale)
        scale = max(image.width / output.width for output, image in copies)
        canvas = Image.new("RGB", (round(frame.width * scale), round(frame.height * scale)))
        for output, image in copies:
            size = (round(output.width * scale), round(output.height * scale))
            # An output at a coarser scale than the finest is enlarged to it: its text was
            # drawn with fewer pixels, and stays so.
            resized = image if image.size == size else image.resize(size)
            left, top = (output.x - frame.left) * scale, (output.y - frame.top) * scale
            canvas.paste(resized, (round(left), round(top)))
        return canvas, Monitor(0, frame.left, frame.top, frame.width, frame.height, scale)

    def _image(self, output: _Output) -> Image:
        """One screencopy of ``output``, decoded (copied) out of the shared buffer, which
        the next copy of that size overwrites."""
        from PIL import Image

        shm, flags = self._copy(output)
        width, height, stride, fmt = shm.size
        memory: Any = shm.memory
        image = Image.frombuffer("RGB", (width, height), memory, "raw", _RAW_MODES[fmt], stride, 1)
        if flags & _FLAG_Y_INVERT:
            image = image.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
        return image

    def _copy(self, output: _Output) -> tuple[_Shm, int]:
        manager = self._globals["zwlr_screencopy_manager_v1"]
        frame = manager.capture_output(0, output.proxy)  # 0: without the pointer
        offers: list[tuple[int, int, int, int]] = []
        state: dict[str, Any] = {"flags": 0}
        frame.dispatcher["buffer"] = lambda _f, fmt, w, h, stride: offers.append(
            (w, h, stride, fmt)
        )
        frame.dispatcher["flags"] = lambda _f, flags: state.update(flags=flags)
        frame.dispatcher["ready"] = lambda _f, *_time: state.update(done="ready")
        frame.dispatcher["failed"] = lambda _f: state.update(done="failed")
        try:
            self._roundtrip()  # the buffer offers (and buffer_done, from version 3)
            usable = [offer for offer in offers if offer[3] in _RAW_MODES]
            if not usable:
                raise CaptureError(
                    f"the compositor offers no shared-memory format Backscroll reads ({offers})"
                )
            shm = self._shm(usable[0])
            frame.copy(shm.buffer)
            while "done" not in state:
                self._dispatch()
            if state["done"] == "failed":
                raise CaptureError(f"the compositor refused to copy output {output.name}")
            return shm, int(state["flags"])
        finally:
            frame.destroy()

    def _shm(self, size: tuple[int, int, int, int]) -> _Shm:
        cached = self._buffers.get(size)
        if cached is not None:
            return cached
        while len(self._buffers) >= _BUFFERS_KEPT:
            self._buffers.pop(next(iter(self._buffers))).close()
        width, height, stride, fmt = size
        length = stride * height
        fd = os.memfd_create("backscroll-screencopy", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, length)
            memory = mmap.mmap(fd, length)
        except OSError:
            os.close(fd)
            raise
        pool = self._globals["wl_shm"].create_pool(fd, length)
        buffer = pool.create_buffer(0, width, height, stride, fmt)
        self._buffers[size] = _Shm(size, fd, memory, pool, buffer)
        return self._buffers[size]

    # --------------------------------------------------------------- outputs

    def _describe_output(self, output: _Output) -> None:
        manager = self._globals.get("zxdg_output_manager_v1")
        if manager is None or output.xdg is not None:
            return  # described once the manager is bound (globals come in any order)
        xdg = output.xdg = manager.get_xdg_output(output.proxy)

        def position(_o: Any, x: int, y: int) -> None:
            output.x, output.y = x, y

        def size(_o: Any, width: int, height: int) -> None:
            output.width, output.height = width, height

        def name(_o: Any, text: str) -> None:
            output.name = text

        xdg.dispatcher["logical_position"] = position
        xdg.dispatcher["logical_size"] = size
        xdg.dispatcher["name"] = name

    def _first_output(self) -> _Output:
        outputs = sorted(
            (o for o in self._outputs.values() if o.width and o.height), key=lambda o: (o.x, o.y)
        )
        if not outputs:
            raise CaptureError("the Wayland compositor has no output to copy")
        return outputs[0]

    # ------------------------------------------------------------- toplevels

    def _new(self, _manager: Any, handle: Any) -> None:
        # pywayland 0.4 gives an object the compositor creates (a new_id in an event) to
        # the display of the oldest registry it has seen, which after a reconnection is a
        # closed one: the handle is moved to this display, or disconnecting this one would
        # leave it behind, to be freed at some later garbage collection of a dead display
        # (a segfault, measured).
        if handle._display is not self._display:
            handle._display._children.discard(handle)
            handle._display = self._display
            self._display._children.add(handle)
        self._numbers += 1
        top = _Toplevel(self._numbers)
        self._toplevels[handle] = top

        def title(_h: Any, text: str) -> None:
            top.pending["title"] = text

        def app_id(_h: Any, text: str) -> None:
            top.pending["app"] = text

        def state(_h: Any, raw: bytes) -> None:
            values = struct.unpack(f"={len(raw) // 4}I", raw[: len(raw) // 4 * 4])
            top.pending["activated"] = _ACTIVATED in values

        def entered(_h: Any, output: Any) -> None:
            if output not in top.outputs:
                top.outputs.append(output)

        def left(_h: Any, output: Any) -> None:
            if output in top.outputs:
                top.outputs.remove(output)

        def done(_h: Any) -> None:
            for key, value in top.pending.items():
                setattr(top, key, value)
            top.pending.clear()
            if top.activated:
                # Only one window is active; keep the newest last for ``frontmost``.
                self._toplevels[handle] = self._toplevels.pop(handle)

        def closed(h: Any) -> None:
            self._toplevels.pop(handle, None)
            with contextlib.suppress(Exception):
                h.destroy()

        handle.dispatcher["title"] = title
        handle.dispatcher["app_id"] = app_id
        handle.dispatcher["state"] = state
        handle.dispatcher["output_enter"] = entered
        handle.dispatcher["output_leave"] = left
        handle.dispatcher["done"] = done
        handle.dispatcher["closed"] = closed

    # ---------------------------------------------------------------- wire

    def _roundtrip(self) -> None:
        if self._gone or self._display.roundtrip() < 0:
            self._gone = True
            raise CaptureError("the Wayland compositor went away")

    def _dispatch(self) -> None:
        import select

        if self._gone:
            raise CaptureError("the Wayland compositor went away")
        self._display.flush()
        ready, _, _ = select.select([self._display.get_fd()], [], [], _WAIT_S)
        if not ready:
            raise CaptureError("the Wayland compositor did not answer a screencopy in time")
        try:
            self._display.dispatch(block=True)
        except RuntimeError:
            self._gone = True
            raise CaptureError("the Wayland compositor went away") from None
