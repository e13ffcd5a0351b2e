"""What the daemon does with a grab of the screen before it is recorded: which windows are
denied, the active window's part for OCR, the small signature an event keeps, and the
allocator setting that makes 8 MB grabs cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.config import Config

if TYPE_CHECKING:
    from PIL.Image import Image

    from capture.probe import Geometry
    from capture.screen import Monitor

EVENT_SIGNATURE = (32, 18)  # what the event keeps: 576 bytes, enough to compare later


def keep_freed_memory() -> None:
    """Keep freed memory in the heap instead of giving each 8 MB screenshot buffer back.

    Measured (bench/results/capture.txt): with glibc's defaults every grab page-faulted ~6,000
    fresh pages and a frame cost 33.6 ms; with these thresholds, 16.0 ms.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return  # not glibc: its allocator's defaults stay


def denied(config: Config, app: str, title: str, url: str = "") -> bool:
    """Whether a window matches the deny list (by app name, title or the page's address,
    ignoring case)."""
    places = (app.lower(), title.lower(), url.lower())
    return any(p.lower() in place for p in config.deny_apps for place in places)


def event_signature(sig: bytes) -> bytes:
    """The 128x72 duplicate signature cut to what an event keeps."""
    from PIL import Image

    from capture.screen import SIGNATURE_SIZE

    image = Image.frombytes("L", SIGNATURE_SIZE, sig)
    return image.resize(EVENT_SIGNATURE, Image.Resampling.BOX).tobytes()


def window_region(image: Image, geometry: Geometry, monitor: Monitor) -> Image:
    """The window's part of a grab of its monitor (the whole grab if that part is tiny)."""
    scale = monitor.scale
    left, top = geometry.x - monitor.left, geometry.y - monitor.top
    box = (
        max(0, round(left * scale)),
        max(0, round(top * scale)),
        min(image.width, round((left + geometry.width) * scale)),
        min(image.height, round((top + geometry.height) * scale)),
    )
    if box[2] - box[0] < 8 or box[3] - box[1] < 8:
        return image
    return image.crop(box)
