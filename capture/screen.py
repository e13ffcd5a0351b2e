"""Screen grabs, black-outs, visual signatures and thumbnails.

``grab`` takes what ``frame_for`` chooses: the monitor that holds the active window, or, for
a window across several monitors, the rectangle holding all of them. The monitors are asked
of RandR at every grab, so a monitor plugged in or out is seen at the next frame. One mss
instance and one python-xlib connection per thread (X connections must not be shared between
threads). ``signature`` and ``difference`` decide whether a new frame is a duplicate of the
last one; see ``difference`` for the metric and the measurements behind
``dedupe_threshold = 0.02``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from base.errors import CaptureError

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.probe import Geometry

# The signature is a 128×72 grayscale image of the whole monitor: one cell per 15×15
# pixels on a 1920×1080 screen, wider than a 9 px terminal cursor, so a cursor touches at
# most two cells of a row (see ``difference``). At 64×36 a cell is 30 px, and a cursor
# straddling two cells would already be 2/64 = 0.031 of a row, over the threshold.
SIGNATURE_SIZE = (128, 72)
# A cell counts as changed when its mean moved by more than this many gray levels (of
# 255). Screen grabs are exact, so an unchanged cell moves by 0; measured on the test
# desktop, a typed period moved its cell by 4-6 levels and a hyphen split over two cells
# moved each by 3, while the anti-aliased edge of a glyph poking into a neighbouring cell
# moved that cell by 1, which should not widen a change.
CELL_TOLERANCE = 2
DEDUPE_THRESHOLD = 0.02  # the spec's default ``dedupe_threshold``; see ``difference``

# A monitor joins a window's frame when it shows at least this much of the window both ways:
# less is a border, a shadow or a window nudged over the edge, no line of text, and not worth
# a second monitor's pixels (and whatever else that monitor shows).
MIN_SHARED_PX = 32

_screens = threading.local()


@dataclass(frozen=True, slots=True)
class Monitor:
    """A monitor as RandR numbers it (1 is the first), in root-window coordinates; index 0 is
    the rectangle holding several monitors, for a window across them (``frame_for``).

    ``scale`` is how many image pixels a coordinate unit spans: 1 on X11; a Wayland output
    at scale 2 is grabbed with twice its logical width (``capture.wlroots``)."""

    index: int
    left: int
    top: int
    width: int
    height: int
    scale: float = 1.0

    @property
    def origin(self) -> tuple[int, int]:
        """The top-left corner, for ``black_out(..., origin=monitor.origin)``."""
        return self.left, self.top


def grab(geometry: Geometry | None, *, display: str | None = None) -> tuple[Image, Monitor]:
    """What ``frame_for`` chooses for ``geometry`` (the first monitor when None), as RGB."""
    from PIL import Image

    try:
        shot, frame, monitors = _grab(geometry, display)
    except CaptureError:
        raise
    except Exception:
        # This thread's connection may be to an X server that has gone, and perhaps come
        # back on the same display (the daemon's probe has reconnected, but only this
        # thread can replace its own connection): one fresh connection before giving up.
        _forget(display)
        try:
            shot, frame, monitors = _grab(geometry, display)
        except CaptureError:
            raise
        except Exception as exc:
            _forget(display)
            raise CaptureError(
                f"the screen grab failed: {str(exc) or type(exc).__name__}"
            ) from None
    # Decoded straight from mss's buffer: ``shot.bgra`` would copy its 8 MB first.
    image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
    if frame.index == 0:
        black_outside(image, frame, monitors)
    return image, frame


def _grab(geometry: Geometry | None, display: str | None) -> tuple[Any, Monitor, list[Monitor]]:
    """One grab on this thread's connection. mss raises its ScreenShotError, an X error
    from its backend or, on a connection the server closed, a bare AssertionError (10.2)."""
    screen = _screen(display)
    monitors = _randr_monitors(display) or _mss_monitors(screen)
    frame = frame_for(monitors, geometry)
    region = {"left": frame.left, "top": frame.top}
    region |= {"width": frame.width, "height": frame.height}
    return screen.grab(region), frame, monitors


def frame_for(monitors: Sequence[Monitor], geometry: Geometry | None) -> Monitor:
    """What a frame of the window at ``geometry`` shows: the monitor that shows it; for a
    window across monitors (each showing at least ``MIN_SHARED_PX`` of it both ways), the
    smallest rectangle holding those monitors (index 0, at the finest scale among them), so
    that the whole window is in the frame and its text is read whole. ``monitors[0]`` when
    ``geometry`` is None; ``CaptureError`` for a window on no monitor at all."""
    if not monitors:
        raise CaptureError("the display has no monitor to grab")
    if geometry is None:
        return monitors[0]
    showing = [m for m in monitors if min(shared(m, geometry)) >= MIN_SHARED_PX]
    if len(showing) == 1:
        return showing[0]
    if not showing:  # a small window, or a sliver of one
        found = _monitor_for(monitors, geometry) or _most_overlapped(monitors, geometry)
        if min(shared(found, geometry)) <= 0:
            # Left where an unplugged monitor was: nobody sees it, and a grab of another
            # monitor would file that monitor's pixels under this window's title.
            raise CaptureError("the active window is on no monitor")
        return found
    left, top = min(m.left for m in showing), min(m.top for m in showing)
    right = max(m.left + m.width for m in showing)
    bottom = max(m.top + m.height for m in showing)
    scale = max(m.scale for m in showing)
    return Monitor(0, left, top, right - left, bottom - top, scale)


def black_outside(image: Image, frame: Monitor, monitors: Iterable[Monitor]) -> Image:
    """Paint black, in place, what ``image`` (a grab of ``frame``) holds outside every monitor:
    beside monitors of different sizes the X screen has pixels nobody sees, windows' parts
    included."""
    from PIL import Image, ImageDraw

    inside = [m for m in monitors if min(shared(m, frame)) > 0]
    covered = sum(shared(m, frame)[0] * shared(m, frame)[1] for m in inside)
    apart = all(min(shared(a, b)) <= 0 for a, b in itertools.combinations(inside, 2))
    if apart and covered >= frame.width * frame.height:
        return image  # the monitors tile it: the mask would cost 30 ms of a 3840x1080 frame
    unseen = Image.new("L", image.size, 255)
    draw = ImageDraw.Draw(unseen)
    for m in inside:
        x0, y0 = (m.left - frame.left) * frame.scale, (m.top - frame.top) * frame.scale
        x1, y1 = x0 + m.width * frame.scale - 1, y0 + m.height * frame.scale - 1
        draw.rectangle((round(x0), round(y0), round(x1), round(y1)), fill=0)
    image.paste((0, 0, 0), mask=unseen)
    return image


def black_out(
    image: Image,
    rects: Iterable[Geometry],
    *,
    origin: tuple[int, int] = (0, 0),
    scale: float = 1.0,
) -> Image:
    """Paint ``rects`` (root coordinates) black, in place; ``origin`` is the image's
    top-left corner in root coordinates (``(monitor.left, monitor.top)``), ``scale`` its
    pixels per coordinate unit (``monitor.scale``)."""
    import math

    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    left, top = origin
    for rect in rects:
        if rect.width > 0 and rect.height > 0:
            # Rounded outwards: a fractional scale must never leave a denied pixel row.
            x0 = math.floor((rect.x - left) * scale)
            y0 = math.floor((rect.y - top) * scale)
            x1 = math.ceil((rect.x - left + rect.width) * scale) - 1
            y1 = math.ceil((rect.y - top + rect.height) * scale) - 1
            draw.rectangle((x0, y0, x1, y1), fill="black")
    return image


def signature(image: Image) -> bytes:
    """A 128×72 grayscale miniature of ``image`` (9,216 bytes), for ``difference``.

    Integer ``reduce`` first, then a box resize for the remainder: 1.4 ms for a 1080p
    frame on an idle moment of the test machine, where converting the full frame to
    grayscale first took 2.4 ms.
    """
    from PIL import Image

    factor = max(1, min(image.width // SIGNATURE_SIZE[0], image.height // SIGNATURE_SIZE[1]))
    small = image.reduce(factor) if factor > 1 else image
    if small.size != SIGNATURE_SIZE:
        small = small.resize(SIGNATURE_SIZE, Image.Resampling.BOX)
    return small.convert("L").tobytes()


def difference(sig_a: bytes, sig_b: bytes) -> float:
    """How much of the widest-changed signature row changed, in [0, 1].

    A cell changed when its gray level moved by more than ``CELL_TOLERANCE``; the result is
    the largest fraction of changed cells found in any one row of 128 cells. A mean over
    the whole screen cannot separate a blinking cursor from a typed line (their mean
    absolute differences measured 0.00008 and 0.0008, both tiny next to 0.02), but their
    widths differ: a cursor is narrower than a cell, so it touches at most 2 cells of a
    row, while a typed line touches dozens. Measured on the test desktop (1920×1080, xterm
    in DejaVu Sans Mono 11, 9 px per character); tests/test_capture_backends.py keeps
    asserting these relations:

        unchanged screen            0.0
        cursor shown / hidden       0.0078-0.0156   1-2 cells, by column   < 0.02: duplicate
        one typed character         0.0078-0.0156   1-2 cells              < 0.02: duplicate
        two typed characters        0.0234          3 cells                > 0.02
        a typed line (24 chars)     0.133
        one line scrolled           0.148
        switched tab                0.195

    So ``dedupe_threshold = 0.02`` sits between two cells (0.0156) and three (0.0234): a
    blink, a ticking clock digit or one keystroke is a duplicate; a word is not. On a
    4K screen the cells are 30 px and the fonts twice as large, so the relations hold.
    Signatures of different sizes are entirely different (1.0).
    """
    if len(sig_a) != len(sig_b) or not sig_a:
        return 1.0
    from PIL import Image, ImageChops

    a = Image.frombytes("L", SIGNATURE_SIZE, sig_a)
    b = Image.frombytes("L", SIGNATURE_SIZE, sig_b)
    changed = ImageChops.difference(a, b).point(_CHANGED_TABLE).tobytes()
    width = SIGNATURE_SIZE[0]
    widest = max(changed.count(1, row, row + width) for row in range(0, len(changed), width))
    return widest / width


_CHANGED_TABLE = [0 if level <= CELL_TOLERANCE else 1 for level in range(256)]


def thumbnail(image: Image, width: int = 480, quality: int = 60) -> bytes:
    """A JPEG ``width`` pixels wide (the spec's ``thumbnail_width`` / ``thumbnail_quality``).

    An integer box ``reduce`` does nearly all the shrinking: on the test machine a 1080p
    frame took 4 ms this way and 13-15 ms through a Lanczos resize from half size, and at
    480 px the two look the same (screen text is unreadable at that size either way).
    ``optimize`` made the JPEG a third smaller (3.6 KB instead of 5.5 KB for a mostly blank
    desktop) for about 1.5 ms more.
    """
    from PIL import Image

    height = max(1, round(image.height * width / image.width))
    small = image.reduce(max(1, image.width // width))
    if small.size != (width, height):
        small = small.resize((width, height), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    small.save(out, format="JPEG", quality=quality, optimize=True)
    return out.getvalue()


def close() -> None:
    """Close this thread's connections (the daemon's capture thread, on exit)."""
    for display in list(getattr(_screens, "by_display", {})):
        _forget(display)


def _screen(display: str | None) -> Any:
    """This thread's mss instance for ``display``."""
    by_display: dict[str | None, Any] = getattr(_screens, "by_display", {})
    _screens.by_display = by_display
    cached = by_display.get(display)
    if cached is not None:
        return cached
    import mss

    try:
        # mss >= 10.2 names the class MSS; older versions only have the factory.
        factory = getattr(mss, "MSS", None) or mss.mss
        screen = factory(display=display) if display else factory()
    except Exception as exc:
        raise CaptureError(f"cannot open the screen for grabbing: {exc}") from None
    by_display[display] = screen
    return screen


def _forget(display: str | None) -> None:
    for table in ("by_display", "randr_by_display"):
        cached = getattr(_screens, table, {}).pop(display, None)
        if cached is not None:
            with contextlib.suppress(Exception):
                cached.close()


def _randr_monitors(display: str | None) -> list[Monitor] | None:
    """The monitors RandR 1.5 lists now (None without RandR 1.5: mss's list is used).

    Asked at every grab: one round trip took 0.06 ms on the test desktop, where mss's own
    listing (which mss keeps for the life of its connection) took 3.4 ms, reading each
    monitor's EDID as well."""
    from Xlib import display as xdisplay

    by_display: dict[str | None, Any] = getattr(_screens, "randr_by_display", {})
    _screens.randr_by_display = by_display
    connection = by_display.get(display)
    if connection is None:
        # python-xlib leaks the socket of a failed TCP fallback (see ``capture.probe``).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            connection = by_display[display] = xdisplay.Display(display)
    root = connection.screen().root
    if not hasattr(root, "xrandr_get_monitors"):  # python-xlib adds it for RandR >= 1.5
        return None
    listed = root.xrandr_get_monitors(is_active=True).monitors
    return [
        Monitor(index, m.x, m.y, m.width_in_pixels, m.height_in_pixels)
        for index, m in enumerate(listed, start=1)
        if m.width_in_pixels and m.height_in_pixels
    ] or None


def _mss_monitors(screen: Any) -> list[Monitor]:
    listed = screen.monitors  # [0] is the union of all monitors, then each monitor
    real = listed[1:] or listed[:1]
    return [
        Monitor(index, m["left"], m["top"], m["width"], m["height"])
        for index, m in enumerate(real, start=1)
    ]


def _monitor_for(monitors: Sequence[Monitor], geometry: Geometry) -> Monitor | None:
    x, y = geometry.center
    for monitor in monitors:
        if monitor.left <= x < monitor.left + monitor.width and (
            monitor.top <= y < monitor.top + monitor.height
        ):
            return monitor
    return None


def _most_overlapped(monitors: Sequence[Monitor], geometry: Geometry) -> Monitor:
    """The monitor sharing the most area with a window centred off-screen (else the first)."""

    def overlap(m: Monitor) -> int:
        width, height = shared(m, geometry)
        return max(0, width) * max(0, height)

    return max(monitors, key=overlap)


def shared(monitor: Monitor, rect: Geometry | Monitor) -> tuple[int, int]:
    """How wide and how high the part of ``rect`` on ``monitor`` is (<= 0: none)."""
    x, y, width, height = (
        (rect.left, rect.top, rect.width, rect.height)
        if isinstance(rect, Monitor)
        else (rect.x, rect.y, rect.width, rect.height)
    )
    shared_width = min(monitor.left + monitor.width, x + width) - max(monitor.left, x)
    shared_height = min(monitor.top + monitor.height, y + height) - max(monitor.top, y)
    return shared_width, shared_height
